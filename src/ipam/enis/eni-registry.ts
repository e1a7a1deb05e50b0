// Every ENI the pool manager knows, each in exactly one lifecycle state, with the facts that decide
// what vpcnet may do with it. One registry instead of a set per question, so an ENI cannot be
// "unconfigured" and "detachable" and "pending delete" at once by accident.
//
//   unmanaged ........ attached, never used (a trunk, an EFA, tagged no_manage); occupies a slot
//   configuring ...... attached, its host link not configured yet; its addresses are not lent
//   ready ............ link configured, its addresses are in the pool
//   detaching ........ out of the pool; link being torn down, then the cloud detaches it
//   deletePending .... detached (or never attached) ENI vpcnet created, delete retried until done
//
//   configuring → ready → detaching → deletePending → (deleted, forgotten)
//                   ↑          │
//                   └─ configuring (teardown or detach failed: set up again)
//
// After a restart, ENIs the ledger records as being freed come back as detaching or deletePending
// (pending-enis.ts). A freshly attached ENI is not freed in its first minute (as the upstream's
// minENILifeTime), so a pool that just grew does not flap.

import type { EniInfo } from '../../cloud/cloud.ts';

export type EniState = 'unmanaged' | 'configuring' | 'ready' | 'detaching' | 'deletePending';

/** The upstream's minENILifeTime: an ENI attached (or found) less than this ago is not freed. */
export const MIN_ENI_LIFETIME_MS = 60_000;

const ALLOWED: Readonly<Record<EniState, readonly EniState[]>> = {
  unmanaged: [],
  configuring: ['ready'],
  ready: ['detaching'],
  detaching: ['configuring', 'deletePending'],
  deletePending: [],
};

/** States in which the ENI is attached to the instance (it occupies a device slot). */
const ATTACHED: ReadonlySet<EniState> = new Set(['unmanaged', 'configuring', 'ready', 'detaching']);
/** States in which vpcnet has configured, or is configuring or tearing down, the ENI's host link. */
const LINKED: ReadonlySet<EniState> = new Set(['configuring', 'ready', 'detaching']);

export interface EniEntry {
  readonly eniId: string;
  readonly state: EniState;
  /**
   * What EC2 said about the ENI (while ready, the pool holds its current addresses). Undefined
   * only for an ENI vpcnet created but never managed to attach.
   */
  readonly eni: EniInfo | undefined;
  /** Ownership: only an ENI vpcnet created may be detached and deleted by it. */
  readonly createdByVpcnet: boolean;
  /** DeleteOnTermination is not set on its ENI attachment yet (retried until it sticks). */
  readonly deleteOnTerminationPending: boolean;
  /** For an unmanaged ENI: why vpcnet leaves it alone. */
  readonly unmanagedReason: string | undefined;
  /** The ENI attachment a detach takes (the described one, or the ledger's for a resumed detach). */
  readonly attachmentId: string | undefined;
  /** ms since epoch: when the registry took the ENI in attached (undefined for a left-over). */
  readonly attachedAt: number | undefined;
}

export interface EniFacts {
  readonly createdByVpcnet: boolean;
  readonly deleteOnTerminationPending?: boolean;
  readonly unmanagedReason?: string;
}

export class EniRegistry {
  readonly #clock: { now(): number };
  readonly #minLifetimeMs: number;
  readonly #entries = new Map<string, EniEntry>();
  /** ENIs vpcnet deleted: a stale DescribeNetworkInterfaces may still list them as attached. */
  readonly #deleted = new Set<string>();

  constructor(clock: { now(): number }, minLifetimeMs: number = MIN_ENI_LIFETIME_MS) {
    this.#clock = clock;
    this.#minLifetimeMs = minLifetimeMs;
  }

  /** Registers an attached ENI; one already known (or deleted by vpcnet) is an error. */
  add(eni: EniInfo, state: 'unmanaged' | 'configuring' | 'ready', facts: EniFacts): EniEntry {
    this.#refuseKnown(eni.eniId);
    if (state === 'unmanaged' && facts.unmanagedReason === undefined)
      throw new Error(`ENI ${eni.eniId}: an unmanaged ENI needs the reason it is unmanaged`);
    const entry: EniEntry = {
      eniId: eni.eniId,
      state,
      eni,
      createdByVpcnet: facts.createdByVpcnet,
      deleteOnTerminationPending: facts.deleteOnTerminationPending ?? false,
      unmanagedReason: facts.unmanagedReason,
      attachmentId: eni.attachmentId,
      attachedAt: this.#clock.now(),
    };
    this.#entries.set(eni.eniId, entry);
    return entry;
  }

  /**
   * Registers an ENI vpcnet had started to free before a restart: detaching, its attachment to be
   * detached again. `eni` is what EC2 still says about it, if it lists it attached.
   */
  addResumedDetach(eniId: string, attachmentId: string, eni: EniInfo | undefined): EniEntry {
    this.#refuseKnown(eniId);
    const entry: EniEntry = {
      eniId,
      state: 'detaching',
      eni,
      createdByVpcnet: true,
      deleteOnTerminationPending: false,
      unmanagedReason: undefined,
      attachmentId,
      attachedAt: undefined,
    };
    this.#entries.set(eniId, entry);
    return entry;
  }

  /** Registers an ENI vpcnet created but could neither attach nor delete: its delete is retried. */
  addLeftOver(eniId: string): EniEntry {
    this.#refuseKnown(eniId);
    const entry: EniEntry = {
      eniId,
      state: 'deletePending',
      eni: undefined,
      createdByVpcnet: true,
      deleteOnTerminationPending: false,
      unmanagedReason: undefined,
      attachmentId: undefined,
      attachedAt: undefined,
    };
    this.#entries.set(eniId, entry);
    return entry;
  }

  /**
   * Moves an ENI to its next state; `eni` (same ENI) replaces what is known about it, e.g. the
   * addresses it holds as it leaves the pool. A move the lifecycle does not allow throws.
   */
  transition(eniId: string, to: EniState, eni?: EniInfo): EniEntry {
    const entry = this.#entries.get(eniId);
    if (!entry) throw new Error(`ENI ${eniId} cannot go to ${to}: the registry does not know it`);
    if (!ALLOWED[entry.state].includes(to))
      throw new Error(`ENI ${eniId} cannot go from ${entry.state} to ${to}`);
    if (eni !== undefined && eni.eniId !== eniId)
      throw new Error(`ENI ${eniId} cannot take the facts of ${eni.eniId}`);
    // Detached, it no longer goes away with the instance: nothing left to set on its ENI attachment.
    const detached = to === 'deletePending';
    const next: EniEntry = {
      ...entry,
      state: to,
      eni: eni ?? entry.eni,
      attachmentId: eni?.attachmentId ?? entry.attachmentId,
      deleteOnTerminationPending: detached ? false : entry.deleteOnTerminationPending,
    };
    this.#entries.set(eniId, next);
    return next;
  }

  /** DeleteOnTermination is not known to be set (an ENI attached just before a restart): retry it. */
  deleteOnTerminationNeeded(eniId: string): void {
    const entry = this.#entries.get(eniId);
    if (entry && entry.state !== 'deletePending')
      this.#entries.set(eniId, { ...entry, deleteOnTerminationPending: true });
  }

  deleteOnTerminationSet(eniId: string): void {
    const entry = this.#entries.get(eniId);
    if (entry) this.#entries.set(eniId, { ...entry, deleteOnTerminationPending: false });
  }

  /** The cloud deleted the ENI: only a delete-pending ENI may go. */
  forget(eniId: string): void {
    const entry = this.#entries.get(eniId);
    if (!entry) return;
    if (entry.state !== 'deletePending')
      throw new Error(`ENI ${eniId} cannot be forgotten while ${entry.state}: it is still attached`);
    this.#entries.delete(eniId);
    this.#deleted.add(eniId);
  }

  /**
   * EC2 says the ENI is no longer attached (confirmed by the sync pass), though vpcnet never freed
   * it: it leaves the registry without a cloud call. Unlike a deleted ENI it may be adopted again
   * if EC2 lists it once more. Only an ENI in the pool or on its way into it can go this way.
   */
  gone(eniId: string): void {
    const entry = this.#entries.get(eniId);
    if (!entry) return;
    if (entry.state !== 'ready' && entry.state !== 'configuring')
      throw new Error(`ENI ${eniId} cannot be dropped as gone while ${entry.state}`);
    this.#entries.delete(eniId);
  }

  get(eniId: string): EniEntry | undefined {
    return this.#entries.get(eniId);
  }

  /** Known now, or deleted by vpcnet earlier (a describe that still lists it is stale). */
  knows(eniId: string): boolean {
    return this.#entries.has(eniId) || this.#deleted.has(eniId);
  }

  /** Entries in the given states, by device number (left-over ENIs last). */
  inState(...states: EniState[]): EniEntry[] {
    return [...this.#entries.values()]
      .filter((e) => states.includes(e.state))
      .sort((a, b) => (a.eni?.deviceNumber ?? Infinity) - (b.eni?.deviceNumber ?? Infinity));
  }

  /** ENIs attached to the instance, managed or not: each occupies a device slot. */
  attachedCount(): number {
    return this.inState(...ATTACHED).length;
  }

  usedDeviceNumbers(): Set<number> {
    return new Set(this.inState(...ATTACHED).flatMap((e) => (e.eni ? [e.eni.deviceNumber] : [])));
  }

  /**
   * Ownership: the `from <primary IP>` rule at the pods' priority belongs to the ENI, not to a pod.
   * The primary IPs of every ENI whose link vpcnet configured, or is configuring or tearing down,
   * so the reconcile loop never collects that rule as an orphan.
   */
  protectedAddresses(): Set<string> {
    return new Set(this.inState(...LINKED).flatMap((e) => (e.eni ? [e.eni.primaryIp] : [])));
  }

  /**
   * Ready ENIs vpcnet created, other than the primary, attached at least a minute ago: the only
   * ones it may free.
   */
  freeable(): Set<string> {
    const youngSince = this.#clock.now() - this.#minLifetimeMs;
    return new Set(
      this.inState('ready')
        .filter((e) => e.createdByVpcnet && e.eni !== undefined && e.eni.deviceNumber !== 0)
        .filter((e) => e.attachedAt === undefined || e.attachedAt <= youngSince)
        .map((e) => e.eniId),
    );
  }

  /** The primary ENI (device 0) as it was described, managed or not. */
  primary(): EniInfo | undefined {
    return [...this.#entries.values()].find((e) => e.eni?.deviceNumber === 0)?.eni;
  }

  /** The trunk ENI (pods with their own security groups), if one is attached. */
  trunk(): EniInfo | undefined {
    return this.inState('unmanaged').find((e) => e.eni?.interfaceType === 'trunk')?.eni;
  }

  #refuseKnown(eniId: string): void {
    const known = this.#entries.get(eniId);
    if (known) throw new Error(`ENI ${eniId} is already registered (${known.state})`);
    if (this.#deleted.has(eniId)) throw new Error(`ENI ${eniId} was deleted by vpcnet`);
  }
}
