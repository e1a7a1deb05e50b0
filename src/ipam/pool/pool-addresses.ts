// The pool's addresses as the agent's ADD and DEL see them: allocation in memory, release with its
// cooldown written to the durable records (ipam is the one owner of cooldown records), and a wait,
// with a deadline, for an address when the pool is empty.

import { errorText } from '../../infra/error-text.ts';
import type { AttachmentKey } from '../../plan/attachment.ts';
import { attachmentKeyString } from '../../plan/attachment.ts';
import { AddressWaiters } from './address-waiters.ts';
import type { AddressPool, PoolEni } from './pool.ts';
import type { PoolLog } from './pool-parts.ts';

/** No address came in time; `waitingForEc2`: the pool's growth waited for the EC2 budget. */
export class PoolExhaustedError extends Error {
  constructor(
    message: string,
    readonly waitingForEc2: boolean,
  ) {
    super(message);
    this.name = 'PoolExhaustedError';
  }
}

/** A freed address that must not be handed out before its cooldown ends. */
export interface CoolingRecord {
  readonly ip: string;
  readonly eniId: string;
  /** ms since epoch */
  readonly freedAt: number;
}

/**
 * Where cooldowns are kept durably (convergence: cooldown survives restarts). The agent's Ledger
 * has exactly these methods; the caller that needs a cooldown durable awaits the ledger's commit.
 */
export interface CooldownRecords {
  addCooling(ip: string, eniId: string, freedAt?: number): void;
  removeCooling(ip: string): boolean;
  coolingAddresses(): readonly CoolingRecord[];
}

/** An address a recorded attachment holds. */
export interface AssignmentRecord {
  readonly key: AttachmentKey;
  readonly ip: string;
  readonly eniId: string;
}

/** The ledger as the pool manager uses it: assignments to restore, cooldowns to keep. */
export interface PoolLedger extends CooldownRecords {
  assignments(): readonly AssignmentRecord[];
  /** Whether a record holds an address on the ENI (an index: what assignments() would name). */
  eniHeld(eniId: string): boolean;
  commit(): Promise<void>;
}

/** What the ledger's attachments hold: their addresses, their ENIs, and how many on each. */
export interface LedgerHeld {
  readonly ips: ReadonlySet<string>;
  readonly enis: ReadonlySet<string>;
  readonly perEni: ReadonlyMap<string, number>;
}

/** A pool address as the agent's ADD needs it. */
export interface ManagedAddress {
  readonly ip: string;
  readonly eniId: string;
  readonly routeTable: number;
  readonly eni: PoolEni;
}

export interface PoolAddressesDeps {
  readonly pool: AddressPool;
  readonly clock: { now(): number };
  readonly log: PoolLog;
  readonly ledger: PoolLedger | undefined;
  /** The pool changed: the manager's loop should run a pass soon. */
  readonly nudge: () => void;
  /** An ADD began to wait for an address (the EC2 budget serves its top-up as demand). */
  readonly waiting?: () => void;
  readonly stopping: () => boolean;
  /** Why no address came within timeoutMs (the limits in the way). */
  readonly exhausted: (timeoutMs: number) => PoolExhaustedError;
}

export class PoolAddresses {
  readonly #d: PoolAddressesDeps;
  readonly #waiters = new AddressWaiters();

  constructor(deps: PoolAddressesDeps) {
    this.#d = deps;
  }

  /** Rebuilds assignments and cooldowns from the ledger, once the ENIs are in the pool. */
  restore(): void {
    const { pool, log, ledger } = this.#d;
    if (!ledger) return;
    for (const att of ledger.assignments()) {
      if (!pool.restoreAssigned(att.ip, attachmentKeyString(att.key))) {
        log.error('ledger attachment holds an address this node does not have', { key: att.key, ip: att.ip });
      }
    }
    // Convergence: cooldown survives restarts.
    for (const c of [...ledger.coolingAddresses()]) {
      // A record for an address this node no longer has (or that is held again) protects nothing.
      if (!pool.restoreCooling(c.ip, c.freedAt)) ledger.removeCooling(c.ip);
    }
  }

  /**
   * Applies the ledger to the addresses of an ENI that just entered the pool. For an ENI found
   * after start (a describe at start that missed it), so an address a pod holds is never lent.
   */
  restoreOn(eniId: string): void {
    const { pool, log, ledger } = this.#d;
    if (!ledger) return;
    for (const att of ledger.assignments()) {
      if (pool.eniIdOf(att.ip) !== eniId) continue;
      if (!pool.restoreAssigned(att.ip, attachmentKeyString(att.key)))
        log.error('ledger attachment holds an address another owner holds', { key: att.key, ip: att.ip });
    }
    for (const c of ledger.coolingAddresses()) {
      if (pool.eniIdOf(c.ip) === eniId) pool.restoreCooling(c.ip, c.freedAt);
    }
  }

  /**
   * Applies the ledger to addresses that just joined the pool (EC2 listed them again, or they were
   * assigned outside vpcnet): one a record holds is assigned to it before anything may lend it, one
   * still cooling cools on.
   */
  restoreAddresses(ips: readonly string[]): void {
    const { pool, log, ledger } = this.#d;
    if (!ledger || ips.length === 0) return;
    const joined = new Set(ips);
    for (const att of ledger.assignments()) {
      if (!joined.has(att.ip)) continue;
      if (!pool.restoreAssigned(att.ip, attachmentKeyString(att.key)))
        log.error('ledger attachment holds an address another owner holds', { key: att.key, ip: att.ip });
    }
    for (const c of ledger.coolingAddresses()) if (joined.has(c.ip)) pool.restoreCooling(c.ip, c.freedAt);
  }

  /** The addresses, and their ENIs, that the ledger's attachments hold (ownership, whatever EC2 says). */
  ledgerHeld(): LedgerHeld {
    const records = this.#d.ledger?.assignments() ?? [];
    const perEni = new Map<string, number>();
    for (const a of records) perEni.set(a.eniId, (perEni.get(a.eniId) ?? 0) + 1);
    return { ips: new Set(records.map((a) => a.ip)), enis: new Set(perEni.keys()), perEni };
  }

  /** In memory: an address that is neither assigned nor cooling, or the one `owner` already holds. */
  allocate(owner: string, secondChoice?: (eniId: string, ip: string) => boolean): ManagedAddress | undefined {
    const got = this.#d.pool.allocate(owner, this.#d.clock.now(), secondChoice);
    if (!got) return undefined;
    // The address may have been a cooled one that no pass expired yet: its record goes too.
    this.#d.ledger?.removeCooling(got.ip);
    return { ip: got.ip, eniId: got.eni.eniId, routeTable: got.eni.routeTable, eni: got.eni };
  }

  /**
   * A pod's address was freed: it cools down before reuse, and the cooldown is recorded (the caller
   * awaits the ledger commit before it reports success). Also for an address a half-done ADD held,
   * restored as assigned at init. If the pool has lost track of the address (a stale read at
   * start), `eniId` (the ENI the caller's record names) still lets the cooldown be recorded.
   */
  release(ip: string, eniId?: string): void {
    const { pool, clock, ledger, log } = this.#d;
    const now = clock.now();
    const before = pool.state(ip);
    const released = pool.release(ip, now);
    let onEni = released?.eni.eniId;
    if (!released && before !== undefined && pool.restoreCooling(ip, now)) {
      onEni = pool.eniIdOf(ip);
      if (before.kind === 'free')
        log.warn('released an address the pool did not hold as assigned; cooling it down anyway', { ip });
    }
    onEni ??= eniId;
    if (onEni !== undefined) ledger?.addCooling(ip, onEni, now);
    this.#d.nudge();
  }

  /** An address that never reached a pod (failed fresh ADD): free again at once, no cooldown. */
  unreserve(ip: string): void {
    if (this.#d.pool.unreserve(ip)) this.wakeWaiters();
  }

  /** Drops cooldowns that ended, in the pool and in the records. */
  expireCooling(): void {
    const { pool, clock, ledger, log } = this.#d;
    const expired = pool.expireCooling(clock.now());
    if (expired.length === 0 || !ledger) return;
    for (const ip of expired) ledger.removeCooling(ip);
    // Not needed for safety (an expired record is harmless after a restart), so not awaited.
    ledger.commit().catch((err: unknown) => log.warn('ledger commit failed', { error: errorText(err) }));
  }

  /**
   * Resolves once the pool has an available address (the caller then allocates; another ADD may
   * have won it, so callers loop or fail). Rejects after timeoutMs naming the limits in the way.
   */
  waitForAddress(timeoutMs: number): Promise<void> {
    if (this.available() > 0) return Promise.resolve();
    if (this.#d.stopping()) return Promise.reject(new Error('the agent is stopping'));
    const woken = this.#waiters.wait(timeoutMs, () => this.#d.exhausted(timeoutMs));
    this.#d.waiting?.();
    this.#d.nudge();
    return woken;
  }

  get waiting(): number {
    return this.#waiters.size;
  }

  available(): number {
    return this.#d.pool.stats(this.#d.clock.now()).available;
  }

  wakeWaiters(): void {
    if (this.#waiters.size > 0 && this.available() > 0) this.#waiters.wakeAll();
  }

  rejectWaiters(err: Error): void {
    this.#waiters.rejectAll(err);
  }
}
