// The attachment ledger: every attachment and what it owns (ownership), plus IPAM's durable
// facts (addresses cooling down after release; convergence: cooldown survives restarts; ENIs
// part-way through being created or freed, so a restart finishes them and leaks none).
//
// Mutations are synchronous and in memory; commit() makes them durable. Durable before
// success: a caller awaits commit() before it reports success. Commits are grouped: while one
// write is in flight, later changes wait for the next write, so a burst of N pod operations
// costs about two fsyncs instead of N.

import { type Attachment, type AttachmentKey, attachmentKeyString } from '../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../plan/binding.ts';
import { type RecoveredRecord, recoveredHolderKey, recoveredRecordId } from '../plan/recovered.ts';
import { vpcAddressOf } from '../plan/resource.ts';
import {
  type CoolingAddress,
  LEDGER_SCHEMA_VERSION,
  type LedgerSnapshot,
  type PendingEni,
} from './snapshot.ts';
import type { LedgerStore } from './store.ts';

export interface LedgerClock {
  /** ms since epoch */
  now(): number;
}

interface Waiter {
  /** The change sequence number this commit must see on disk. */
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class Ledger {
  readonly #store: LedgerStore;
  readonly #clock: LedgerClock;
  readonly #attachments = new Map<string, Attachment>();
  readonly #cooling = new Map<string, CoolingAddress>();
  readonly #bindings = new Map<string, BranchBinding>();
  readonly #recovered = new Map<string, RecoveredRecord>();
  readonly #pendingEnis = new Map<string, PendingEni>();
  /** Incremented by every mutation. */
  #seq = 0;
  /** The highest sequence number known to be on disk. */
  #durableSeq = 0;
  #writing = false;
  #flushScheduled = false;
  #waiters: Waiter[] = [];

  private constructor(store: LedgerStore, clock: LedgerClock, snapshot: LedgerSnapshot | undefined) {
    this.#store = store;
    this.#clock = clock;
    for (const a of snapshot?.attachments ?? []) this.#attachments.set(attachmentKeyString(a.key), a);
    for (const c of snapshot?.cooling ?? []) this.#cooling.set(c.ip, c);
    for (const b of snapshot?.bindings ?? []) this.#bindings.set(bindingKeyString(b.key), b);
    for (const r of snapshot?.recovered ?? []) this.#recovered.set(recoveredRecordId(r), r);
    for (const p of snapshot?.pendingEnis ?? []) this.#pendingEnis.set(p.eniId, p);
  }

  /** Loads the ledger; rejects (rather than starting empty) when the stored snapshot is corrupt. */
  static async open(store: LedgerStore, clock: LedgerClock): Promise<Ledger> {
    return new Ledger(store, clock, await store.load());
  }

  /** A ledger over `store` starting from a snapshot the caller loaded (undefined: empty). */
  static fromSnapshot(store: LedgerStore, clock: LedgerClock, snapshot: LedgerSnapshot | undefined): Ledger {
    return new Ledger(store, clock, snapshot);
  }

  get(key: AttachmentKey): Attachment | undefined {
    return this.#attachments.get(attachmentKeyString(key));
  }

  list(): Attachment[] {
    return [...this.#attachments.values()];
  }

  /**
   * Every VPC address a record holds, with its holder (what IPAM restores at start): attachments'
   * and recovered records' (their holder key is recoveredHolderKey's).
   */
  assignments(): { key: AttachmentKey; ip: string; eniId: string }[] {
    const held = this.list().flatMap((a) =>
      a.resources.flatMap((r) => (r.kind === 'vpcAddress' ? [{ key: a.key, ip: r.ip, eniId: r.eniId }] : [])),
    );
    for (const r of this.#recovered.values()) {
      if (r.ip !== undefined && r.eniId !== undefined)
        held.push({ key: recoveredHolderKey(r), ip: r.ip, eniId: r.eniId });
    }
    return held;
  }

  /** Whether a live record holds `ip`: a pod's VPC address, a branch ENI's on this node, a recovered one. */
  addressInUse(ip: string): boolean {
    return (
      this.findByIp(ip) !== undefined ||
      [...this.#recovered.values()].some((r) => r.ip === ip) ||
      [...this.#bindings.values()].some((b) => b.ip === ip && b.supersededBy === undefined)
    );
  }

  /**
   * The VPC address a record's sandbox has: its own (a secondary IP or prefix address), or for a
   * sandbox of a pod with security groups, its binding's branch ENI address.
   */
  addressOf(att: Attachment): { ip: string; eniId: string } | undefined {
    const own = vpcAddressOf(att.resources);
    if (own) return { ip: own.ip, eniId: own.eniId };
    const b = att.branch === undefined ? undefined : this.#bindings.get(att.branch);
    return b ? { ip: b.ip, eniId: b.key.eniId } : undefined;
  }

  binding(key: string): BranchBinding | undefined {
    return this.#bindings.get(key);
  }

  bindings(): BranchBinding[] {
    return [...this.#bindings.values()];
  }

  /** The attachments of a binding (its pod's sandboxes on this node). */
  bindingMembers(key: string): Attachment[] {
    return this.list().filter((a) => a.branch === key);
  }

  /** Inserts or replaces the binding with the same key. */
  putBinding(binding: BranchBinding): void {
    this.#bindings.set(bindingKeyString(binding.key), binding);
    this.#seq++;
  }

  removeBinding(key: string): boolean {
    const removed = this.#bindings.delete(key);
    if (removed) this.#seq++;
    return removed;
  }

  /** The attachment holding VPC address `ip`. */
  findByIp(ip: string): Attachment | undefined {
    for (const a of this.#attachments.values()) {
      if (a.resources.some((r) => r.kind === 'vpcAddress' && r.ip === ip)) return a;
    }
    return undefined;
  }

  /** Inserts or replaces the attachment with the same key. */
  put(attachment: Attachment): void {
    this.#attachments.set(attachmentKeyString(attachment.key), attachment);
    this.#seq++;
  }

  /** Returns whether there was an attachment to remove. */
  remove(key: AttachmentKey): boolean {
    const removed = this.#attachments.delete(attachmentKeyString(key));
    if (removed) this.#seq++;
    return removed;
  }

  /** Recovered records (src/plan/recovered.ts): held until their DEL, a GC or the reconcile pass. */
  recovered(): RecoveredRecord[] {
    return [...this.#recovered.values()];
  }

  /** Inserts or replaces the recovered record with the same id (its host veth, or its address). */
  putRecovered(record: RecoveredRecord): void {
    this.#recovered.set(recoveredRecordId(record), record);
    this.#seq++;
  }

  /** Removes exactly this record (not one that replaced it); returns whether it was there. */
  removeRecovered(record: RecoveredRecord): boolean {
    const id = recoveredRecordId(record);
    if (this.#recovered.get(id) !== record) return false;
    this.#recovered.delete(id);
    this.#seq++;
    return true;
  }

  coolingAddresses(): CoolingAddress[] {
    return [...this.#cooling.values()];
  }

  /** Records that `ip` was freed (at `freedAt`, default now) and must cool down before reuse. */
  addCooling(ip: string, eniId: string, freedAt: number = this.#clock.now()): void {
    this.#cooling.set(ip, { ip, eniId, freedAt });
    this.#seq++;
  }

  removeCooling(ip: string): boolean {
    const removed = this.#cooling.delete(ip);
    if (removed) this.#seq++;
    return removed;
  }

  /** ENIs vpcnet is part-way through creating or freeing. */
  pendingEnis(): PendingEni[] {
    return [...this.#pendingEnis.values()];
  }

  /** Records (or moves to its next step) an ENI vpcnet is creating or freeing. */
  putPendingEni(record: PendingEni): void {
    this.#pendingEnis.set(record.eniId, record);
    this.#seq++;
  }

  /** The ENI's creation or freeing is finished (attached and in use, or deleted). */
  removePendingEni(eniId: string): boolean {
    const removed = this.#pendingEnis.delete(eniId);
    if (removed) this.#seq++;
    return removed;
  }

  /** The current in-memory state as a snapshot (what the next write will carry). */
  snapshot(): LedgerSnapshot {
    return {
      schemaVersion: LEDGER_SCHEMA_VERSION,
      attachments: [...this.#attachments.values()],
      cooling: [...this.#cooling.values()],
      bindings: [...this.#bindings.values()],
      ...(this.#recovered.size > 0 ? { recovered: [...this.#recovered.values()] } : {}),
      pendingEnis: [...this.#pendingEnis.values()],
    };
  }

  /**
   * Resolves once every change made before this call is on disk; rejects if the write that
   * carried them failed (the changes stay in memory and ride on the next write).
   */
  commit(): Promise<void> {
    const seq = this.#seq;
    if (seq <= this.#durableSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, resolve, reject });
      this.#scheduleFlush();
    });
  }

  #scheduleFlush(): void {
    if (this.#writing || this.#flushScheduled) return;
    this.#flushScheduled = true;
    // Defer to a microtask so that commits issued in the same tick share one write.
    queueMicrotask(() => {
      this.#flushScheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#writing || this.#waiters.length === 0) return;
    this.#writing = true;
    const seq = this.#seq;
    let failure: { err: unknown } | undefined;
    try {
      await this.#store.save(this.snapshot());
      this.#durableSeq = Math.max(this.#durableSeq, seq);
    } catch (err) {
      failure = { err };
    }
    this.#writing = false;
    // Settle exactly the commits whose changes this write carried; later ones wait for the next.
    const carried = this.#waiters.filter((w) => w.seq <= seq);
    this.#waiters = this.#waiters.filter((w) => w.seq > seq);
    for (const w of carried) {
      if (failure === undefined) w.resolve();
      else w.reject(failure.err);
    }
    if (this.#waiters.length > 0) this.#scheduleFlush();
  }
}
