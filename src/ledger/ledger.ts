// The attachment ledger: every attachment and what it owns (ownership), plus IPAM's durable
// facts (addresses cooling down after release; convergence: cooldown survives restarts; ENIs
// part-way through being created or freed, so a restart finishes them and leaks none).
//
// Mutations are synchronous and in memory; commit() makes them durable. Durable before
// success: a caller awaits commit() before it reports success. Commits are grouped: while one
// write is in flight, later changes wait for the next write, so a burst of N pod operations
// costs about two fsyncs instead of N. A write carries the records changed since the last one
// (a journal record, store.ts), and the lookups an ADD or DEL makes go through indexes that every
// mutation keeps, so neither grows with the number of attachments.

import { type Attachment, type AttachmentKey, attachmentKeyString } from '../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../plan/binding.ts';
import { type RecoveredRecord, recoveredHolderKey, recoveredRecordId } from '../plan/recovered.ts';
import { vpcAddressOf } from '../plan/resource.ts';
import { type ChangedIds, ChangedRecords } from './changed-records.ts';
import { type LedgerChanges, listChanges } from './changes.ts';
import {
  type CoolingAddress,
  type EniCreate,
  LEDGER_SCHEMA_VERSION,
  type LedgerSnapshot,
  type PendingEni,
} from './format/snapshot.ts';
import { LedgerIndexes, optional } from './ledger-indexes.ts';
import { GroupCommit } from './storage/group-commit.ts';
import type { LedgerStore } from './storage/store.ts';

export interface LedgerClock {
  /** ms since epoch */
  now(): number;
}

export class Ledger {
  readonly #store: LedgerStore;
  readonly #clock: LedgerClock;
  readonly #attachments = new Map<string, Attachment>();
  readonly #cooling = new Map<string, CoolingAddress>();
  readonly #bindings = new Map<string, BranchBinding>();
  readonly #recovered = new Map<string, RecoveredRecord>();
  readonly #pendingEnis = new Map<string, PendingEni>();
  readonly #eniCreates = new Map<string, EniCreate>();
  /** Incremented by every mutation. */
  #seq = 0;
  readonly #commits: GroupCommit;
  /** Records changed since the last write that carried them. */
  readonly #changed = new ChangedRecords();
  readonly #index = new LedgerIndexes();

  private constructor(
    store: LedgerStore,
    clock: LedgerClock,
    snapshot: LedgerSnapshot | undefined,
    quietMs?: number,
  ) {
    this.#store = store;
    this.#clock = clock;
    this.#commits = new GroupCommit(
      () => this.#seq,
      {
        write: () => this.#write(),
        sync: () => this.#sync(),
        quietWorkDue: () => store.compactionDue?.() ?? false,
        quietWork: () => this.#compactWhenQuiet(),
      },
      quietMs,
    );
    for (const a of snapshot?.attachments ?? []) this.#setAttachment(a);
    for (const c of snapshot?.cooling ?? []) this.#cooling.set(c.ip, c);
    for (const b of snapshot?.bindings ?? []) this.#setBinding(b);
    for (const r of snapshot?.recovered ?? []) this.#setRecovered(r);
    for (const p of snapshot?.pendingEnis ?? []) this.#pendingEnis.set(p.eniId, p);
    for (const c of snapshot?.eniCreates ?? []) this.#eniCreates.set(c.token, c);
  }

  /** Loads the ledger; rejects (rather than starting empty) when the stored snapshot is corrupt. */
  static async open(store: LedgerStore, clock: LedgerClock, quietMs?: number): Promise<Ledger> {
    return new Ledger(store, clock, await store.load(), quietMs);
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

  /** Whether an attachment or a recovered record holds an address on `eniId` (as assignments() lists them). */
  eniHeld(eniId: string): boolean {
    return this.#index.eniHeld(eniId);
  }

  /** Whether a live record holds `ip`: a pod's VPC address, a branch ENI's on this node, a recovered one. */
  addressInUse(ip: string): boolean {
    return this.#index.addressInUse(ip);
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
    return this.#index.attachmentsByBinding.holders(key).flatMap((id) => optional(this.#attachments.get(id)));
  }

  /** Inserts or replaces the binding with the same key. */
  putBinding(binding: BranchBinding): void {
    this.#changed.mark('bindings', this.#setBinding(binding));
    this.#seq++;
  }

  removeBinding(key: string): boolean {
    const b = this.#bindings.get(key);
    if (b === undefined) return false;
    this.#index.binding(key, b, undefined);
    this.#bindings.delete(key);
    this.#changed.mark('bindings', key);
    this.#seq++;
    return true;
  }

  /** The attachment holding VPC address `ip`. */
  findByIp(ip: string): Attachment | undefined {
    const [id] = this.#index.attachmentsByIp.holders(ip);
    return id === undefined ? undefined : this.#attachments.get(id);
  }

  /** Inserts or replaces the attachment with the same key. */
  put(attachment: Attachment): void {
    this.#changed.mark('attachments', this.#setAttachment(attachment));
    this.#seq++;
  }

  /** Returns whether there was an attachment to remove. */
  remove(key: AttachmentKey): boolean {
    const id = attachmentKeyString(key);
    const a = this.#attachments.get(id);
    if (a === undefined) return false;
    this.#index.attachment(id, a, undefined);
    this.#attachments.delete(id);
    this.#changed.mark('attachments', id);
    this.#seq++;
    return true;
  }

  /** Recovered records (src/plan/recovered.ts): held until their DEL, a GC or the reconcile pass. */
  recovered(): RecoveredRecord[] {
    return [...this.#recovered.values()];
  }

  /** Inserts or replaces the recovered record with the same id (its host veth, or its address). */
  putRecovered(record: RecoveredRecord): void {
    this.#changed.mark('recovered', this.#setRecovered(record));
    this.#seq++;
  }

  /** Removes exactly this record (not one that replaced it); returns whether it was there. */
  removeRecovered(record: RecoveredRecord): boolean {
    const id = recoveredRecordId(record);
    if (this.#recovered.get(id) !== record) return false;
    this.#index.recovered(id, record, undefined);
    this.#recovered.delete(id);
    this.#changed.mark('recovered', id);
    this.#seq++;
    return true;
  }

  coolingAddresses(): CoolingAddress[] {
    return [...this.#cooling.values()];
  }

  /** Records that `ip` was freed (at `freedAt`, default now) and must cool down before reuse. */
  addCooling(ip: string, eniId: string, freedAt: number = this.#clock.now()): void {
    this.#cooling.set(ip, { ip, eniId, freedAt });
    this.#changed.mark('cooling', ip);
    this.#seq++;
  }

  removeCooling(ip: string): boolean {
    const removed = this.#cooling.delete(ip);
    if (removed) this.#markRemoved('cooling', ip);
    return removed;
  }

  /** ENIs vpcnet is part-way through creating or freeing. */
  pendingEnis(): PendingEni[] {
    return [...this.#pendingEnis.values()];
  }

  /** Records (or moves to its next step) an ENI vpcnet is creating or freeing. */
  putPendingEni(record: PendingEni): void {
    this.#pendingEnis.set(record.eniId, record);
    this.#changed.mark('pendingEnis', record.eniId);
    this.#seq++;
  }

  /** The ENI's creation or freeing is finished (attached and in use, or deleted). */
  removePendingEni(eniId: string): boolean {
    const removed = this.#pendingEnis.delete(eniId);
    if (removed) this.#markRemoved('pendingEnis', eniId);
    return removed;
  }

  /** ENI creations asked of EC2 and not yet followed by an attaching record. */
  eniCreates(): EniCreate[] {
    return [...this.#eniCreates.values()];
  }

  /** Records an ENI creation about to be asked of EC2. */
  putEniCreate(record: EniCreate): void {
    this.#eniCreates.set(record.token, record);
    this.#changed.mark('eniCreates', record.token);
    this.#seq++;
  }

  /** The creation is accounted for: its ENI recorded (attaching, deleting) or known never made. */
  removeEniCreate(token: string): boolean {
    const removed = this.#eniCreates.delete(token);
    if (removed) this.#markRemoved('eniCreates', token);
    return removed;
  }

  #markRemoved(list: 'cooling' | 'pendingEnis' | 'eniCreates', id: string): void {
    this.#changed.mark(list, id);
    this.#seq++;
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
      ...(this.#eniCreates.size > 0 ? { eniCreates: [...this.#eniCreates.values()] } : {}),
    };
  }

  /**
   * Resolves once every change made before this call is on disk; rejects if the write that
   * carried them failed (the changes stay in memory and ride on the next write).
   */
  commit(): Promise<void> {
    return this.#commits.commit('durable');
  }

  /**
   * Resolves once every change made before this call is written (in the kernel's page cache, not
   * yet synced): it outlives the agent's process, not a power cut (group-commit.ts). Never enough
   * for an answer to the runtime; enough for a record of what the kernel is about to hold.
   */
  stage(): Promise<void> {
    return this.#commits.commit('written');
  }

  /**
   * Writes now a compaction the store has due (store.ts: none to append to, as on a fresh node,
   * or a journal past its bound), so the first commit is one append. The agent calls it before
   * it serves, where no pod waits for it.
   */
  prepare(): Promise<void> {
    return this.#commits.quietWorkNow();
  }

  /** Releases what the store keeps open between writes (the journal); a later commit reopens it. */
  async close(): Promise<void> {
    await this.#commits.stopQuietWork();
    await this.#store.close?.();
  }

  /** One write (group-commit.ts): the records changed since the last one that succeeded. */
  async #write(): Promise<{ synced: boolean }> {
    const changed = this.#changed.take();
    const snapshot = () => this.snapshot();
    const store = this.#store;
    try {
      if (store.saveChanges === undefined) await store.save(snapshot());
      else if (store.writeChanges === undefined) await store.saveChanges(this.#changesOf(changed), snapshot);
      else return { synced: await store.writeChanges(this.#changesOf(changed), snapshot) };
      return { synced: true };
    } catch (err) {
      this.#changed.restore(changed);
      throw err;
    }
  }

  /** A compaction the store put off while commits kept coming: it carries every change so far. */
  async #compactWhenQuiet(): Promise<boolean> {
    const changed = this.#changed.take();
    let compacted = false;
    try {
      compacted = (await this.#store.compactWhenQuiet?.(() => this.snapshot())) === true;
    } finally {
      // Not compacted (nothing due, or a failure): the changes ride on the next write.
      if (!compacted) this.#changed.restore(changed);
    }
    return compacted;
  }

  /** Makes what #write wrote durable (a store without staged writes wrote it durably). */
  async #sync(): Promise<void> {
    await this.#store.sync?.();
  }

  // Inserts and replaces; each removal above reports to the indexes too (ledger-indexes.ts).

  #setAttachment(a: Attachment): string {
    const id = attachmentKeyString(a.key);
    this.#index.attachment(id, this.#attachments.get(id), a);
    this.#attachments.set(id, a);
    return id;
  }

  #setBinding(b: BranchBinding): string {
    const id = bindingKeyString(b.key);
    this.#index.binding(id, this.#bindings.get(id), b);
    this.#bindings.set(id, b);
    return id;
  }

  #setRecovered(r: RecoveredRecord): string {
    const id = recoveredRecordId(r);
    this.#index.recovered(id, this.#recovered.get(id), r);
    this.#recovered.set(id, r);
    return id;
  }

  /** Each changed record as it is now: put, or removed when it is gone. */
  #changesOf(changed: ChangedIds): LedgerChanges {
    return {
      attachments: listChanges(changed.attachments, this.#attachments),
      cooling: listChanges(changed.cooling, this.#cooling),
      bindings: listChanges(changed.bindings, this.#bindings),
      recovered: listChanges(changed.recovered, this.#recovered),
      pendingEnis: listChanges(changed.pendingEnis, this.#pendingEnis),
      eniCreates: listChanges(changed.eniCreates, this.#eniCreates),
    };
  }
}
