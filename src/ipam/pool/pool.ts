// The node's address pool: its ENIs and their secondary IPs, each free, assigned to one
// attachment, or cooling down after release. Purely in memory and synchronous, so an ADD never
// waits on the cloud while a free address exists. An ENI may be draining (its subnet is excluded
// by its tags, subnet-tags.ts): its pods keep their addresses, it lends no new one. The durable copy of assignments and cooldowns
// is the ledger; the pool is rebuilt from it with restoreAssigned/restoreCooling (convergence:
// cooldown survives restarts).
import { subnetGateway } from '../../infra/ipv4.ts';

/** An owner is an attachment key string (attachmentKeyString). */
export type AddressState =
  | { readonly kind: 'free' }
  | { readonly kind: 'assigned'; readonly owner: string }
  | { readonly kind: 'cooling'; readonly freedAt: number };

export interface EniSpec {
  readonly eniId: string;
  readonly mac: string;
  readonly deviceNumber: number;
  readonly subnetId: string;
  readonly primaryIp: string;
  readonly subnetCidr: string;
}

export interface PoolEni extends EniSpec {
  /** 254 (main) for the primary ENI, deviceNumber + 1 otherwise. */
  readonly routeTable: number;
  /** The VPC router of the ENI's subnet: the subnet's first host address. */
  readonly gateway: string;
}

export interface PoolStats {
  /** Addresses in the pool (assigned + cooling + unconfirmed + available), on draining ENIs too. */
  readonly total: number;
  readonly assigned: number;
  /** Freed addresses still inside their cooldown. */
  readonly cooling: number;
  /** Addresses allocate() could hand out now: none of a draining ENI's. */
  readonly available: number;
  /** Held-back addresses that are not lent until a second read confirms them (IMDS-only mode); absent when none. */
  readonly unconfirmed?: number;
  /** ENIs in the pool. */
  readonly enis: number;
}

export interface EniStats extends Omit<PoolStats, 'enis'> {
  readonly eniId: string;
  readonly deviceNumber: number;
  /** The ENI lends no new address (setDraining); its available ones are not to be lent. */
  readonly draining?: boolean;
}

export interface Allocation {
  readonly ip: string;
  readonly eni: PoolEni;
}

export function routeTableFor(deviceNumber: number): number {
  return deviceNumber === 0 ? 254 : deviceNumber + 1;
}

interface EniEntry {
  readonly eni: PoolEni;
  readonly addresses: Map<string, AddressState>;
}

const FREE: AddressState = { kind: 'free' };

/** Told when an ENI or addresses join or leave the pool (the cloud sync remembers vpcnet's changes). */
export type MembershipListener = (eniId: string, ips: readonly string[], wholeEni: boolean) => void;

export class AddressPool {
  readonly #cooldownMs: number;
  readonly #enis = new Map<string, EniEntry>();
  /** ip → eniId, to keep every address on exactly one ENI. */
  readonly #eniOfIp = new Map<string, string>();
  /** owner → ip: one address per attachment. */
  readonly #ipOfOwner = new Map<string, string>();
  /** ENIs that lend no new address (their subnet drains). */
  readonly #draining = new Set<string>();
  readonly #listeners: MembershipListener[] = [];
  /**
   * Addresses the pool knows but may not lend yet (IMDS-only mode: listed by one read, waiting for
   * a second). They can be held (a pod found on the node keeps its address) and released, but
   * allocate() never hands one out before confirm().
   */
  readonly #unconfirmed = new Set<string>();

  constructor(options: { readonly cooldownMs: number }) {
    this.#cooldownMs = options.cooldownMs;
  }

  get cooldownMs(): number {
    return this.#cooldownMs;
  }

  observeMembership(listener: MembershipListener): void {
    this.#listeners.push(listener);
  }

  addEni(spec: EniSpec): PoolEni {
    if (this.#enis.has(spec.eniId)) throw new Error(`ENI ${spec.eniId} is already in the pool`);
    const clash = this.enis().find((e) => e.deviceNumber === spec.deviceNumber);
    if (clash) {
      throw new Error(
        `ENI ${spec.eniId}: device number ${spec.deviceNumber} is already used by ${clash.eniId}`,
      );
    }
    const eni: PoolEni = {
      ...spec,
      routeTable: routeTableFor(spec.deviceNumber),
      gateway: subnetGateway(spec.subnetCidr),
    };
    this.#enis.set(eni.eniId, { eni, addresses: new Map() });
    this.#changed(eni.eniId, [], true);
    return eni;
  }

  /** Removes an ENI and its addresses; refused while any address is assigned (ownership). */
  removeEni(eniId: string): void {
    const entry = this.#enis.get(eniId);
    if (!entry) return;
    const held = [...entry.addresses].filter(([, s]) => s.kind === 'assigned').map(([ip]) => ip);
    if (held.length > 0)
      throw new Error(`cannot remove ENI ${eniId}: addresses still assigned: ${held.join(', ')}`);
    for (const ip of entry.addresses.keys()) {
      this.#eniOfIp.delete(ip);
      this.#unconfirmed.delete(ip);
    }
    this.#enis.delete(eniId);
    this.#draining.delete(eniId);
    this.#changed(eniId, [...entry.addresses.keys()], true);
  }

  /**
   * Marks an ENI as draining (no address of it is lent any more; what its pods hold stays theirs)
   * or lending again. Returns whether that changed anything.
   */
  setDraining(eniId: string, draining: boolean): boolean {
    this.#entry(eniId);
    if (this.#draining.has(eniId) === draining) return false;
    if (draining) this.#draining.add(eniId);
    else this.#draining.delete(eniId);
    return true;
  }

  isDraining(eniId: string): boolean {
    return this.#draining.has(eniId);
  }

  /**
   * Adds new free addresses to an ENI; an address already in the pool is an error. With
   * `unconfirmed`, they are held back: never lent before confirm().
   */
  addAddresses(
    eniId: string,
    ips: readonly string[],
    options: { readonly unconfirmed?: boolean } = {},
  ): void {
    const entry = this.#entry(eniId);
    for (const ip of ips) {
      const on = this.#eniOfIp.get(ip);
      if (on !== undefined) throw new Error(`address ${ip} is already in the pool (on ${on})`);
    }
    for (const ip of ips) {
      entry.addresses.set(ip, FREE);
      this.#eniOfIp.set(ip, eniId);
      if (options.unconfirmed === true) this.#unconfirmed.add(ip);
    }
    this.#changed(eniId, ips, false);
  }

  /** Held-back addresses may be lent from now on; returns those that were held back. */
  confirm(ips: readonly string[]): string[] {
    return ips.filter((ip) => this.#unconfirmed.delete(ip));
  }

  /** Whether the address is in the pool but held back (not lent before confirm()). */
  unconfirmed(ip: string): boolean {
    return this.#unconfirmed.has(ip);
  }

  /** Removes addresses from the pool; refused (nothing removed) if any of them is assigned. */
  removeAddresses(eniId: string, ips: readonly string[]): void {
    const entry = this.#entry(eniId);
    for (const ip of ips) {
      const state = entry.addresses.get(ip);
      if (state?.kind === 'assigned')
        throw new Error(`cannot remove ${ip} from ${eniId}: assigned to ${state.owner}`);
    }
    const removed = ips.filter((ip) => entry.addresses.delete(ip));
    for (const ip of removed) {
      this.#eniOfIp.delete(ip);
      this.#unconfirmed.delete(ip);
    }
    this.#changed(eniId, removed, false);
  }

  /**
   * Hands out an address to `owner`, or returns the one it already holds (a retried ADD gets
   * the same address). Policy: the ENI with the lowest device number that has an address, so
   * pods fill ENIs in order and higher ENIs stay empty enough to shrink; within an ENI, a never
   * used address before one whose cooldown has ended. Never an assigned or still-cooling one.
   * An address `secondChoice` names is taken only when no other is available (prefix mode
   * prefers prefix addresses, secondary-IP mode secondary IPs: pods follow the node's mode).
   * Never an address of a draining ENI.
   */
  allocate(
    owner: string,
    now: number,
    secondChoice?: (eniId: string, ip: string) => boolean,
  ): Allocation | undefined {
    const held = this.#ipOfOwner.get(owner);
    if (held !== undefined) return { ip: held, eni: this.#eniOf(held) };
    const passes =
      secondChoice === undefined
        ? [() => true]
        : [(e: string, ip: string) => !secondChoice(e, ip), secondChoice];
    for (const allowed of passes) {
      for (const { eni, addresses } of this.#sortedEntries()) {
        if (this.#draining.has(eni.eniId)) continue;
        let pick: string | undefined;
        for (const [ip, state] of addresses) {
          if (!allowed(eni.eniId, ip) || this.#unconfirmed.has(ip)) continue;
          if (state.kind === 'free') {
            pick = ip;
            break;
          }
          if (pick === undefined && this.#cooled(state, now)) pick = ip;
        }
        if (pick !== undefined) {
          addresses.set(pick, { kind: 'assigned', owner });
          this.#ipOfOwner.set(owner, pick);
          return { ip: pick, eni };
        }
      }
    }
    return undefined;
  }

  /**
   * Starts the cooldown of an assigned address. With `owner`, only that owner's address is
   * released (ownership: a late DEL for a replaced sandbox cannot free its successor's address).
   * Returns the released owner, or undefined if the address was not assigned (DEL is idempotent).
   */
  release(ip: string, now: number, owner?: string): { owner: string; eni: PoolEni } | undefined {
    const { entry, state } = this.#lookup(ip);
    if (!entry || state?.kind !== 'assigned') return undefined;
    if (owner !== undefined && state.owner !== owner) return undefined;
    entry.addresses.set(ip, { kind: 'cooling', freedAt: now });
    this.#ipOfOwner.delete(state.owner);
    return { owner: state.owner, eni: entry.eni };
  }

  /**
   * Returns an assigned address that never reached a pod (a failed ADD) to free at once, with
   * no cooldown: no pod's traffic ever used it. With `owner`, only that owner's address.
   */
  unreserve(ip: string, owner?: string): boolean {
    const { entry, state } = this.#lookup(ip);
    if (!entry || state?.kind !== 'assigned') return false;
    if (owner !== undefined && state.owner !== owner) return false;
    entry.addresses.set(ip, FREE);
    this.#ipOfOwner.delete(state.owner);
    return true;
  }

  /** Marks an address as held by `owner` (rebuilding from the ledger). False if unknown or held by another. */
  restoreAssigned(ip: string, owner: string): boolean {
    const { entry, state } = this.#lookup(ip);
    if (!entry || !state) return false;
    if (state.kind === 'assigned') return state.owner === owner;
    const other = this.#ipOfOwner.get(owner);
    if (other !== undefined) return false;
    entry.addresses.set(ip, { kind: 'assigned', owner });
    this.#ipOfOwner.set(owner, ip);
    return true;
  }

  /** Marks a free address as cooling since `freedAt` (rebuilding from the ledger). False if unknown or assigned. */
  restoreCooling(ip: string, freedAt: number): boolean {
    const { entry, state } = this.#lookup(ip);
    if (!entry || !state || state.kind === 'assigned') return false;
    entry.addresses.set(ip, { kind: 'cooling', freedAt });
    return true;
  }

  /** Turns addresses whose cooldown has ended into free ones; returns them (to drop from the ledger). */
  expireCooling(now: number): string[] {
    const expired: string[] = [];
    for (const { addresses } of this.#enis.values()) {
      for (const [ip, state] of addresses) {
        if (state.kind === 'cooling' && this.#cooled(state, now)) {
          addresses.set(ip, FREE);
          expired.push(ip);
        }
      }
    }
    return expired;
  }

  /** ms until the earliest cooldown ends, or undefined if nothing is cooling. */
  nextCoolingExpiry(now: number): number | undefined {
    let next: number | undefined;
    for (const { addresses } of this.#enis.values()) {
      for (const state of addresses.values()) {
        if (state.kind !== 'cooling') continue;
        const left = Math.max(state.freedAt + this.#cooldownMs - now, 0);
        next = next === undefined ? left : Math.min(next, left);
      }
    }
    return next;
  }

  stats(now: number): PoolStats {
    const sum = { total: 0, assigned: 0, cooling: 0, available: 0, unconfirmed: 0 };
    for (const s of this.eniStats(now)) {
      sum.total += s.total;
      sum.assigned += s.assigned;
      sum.cooling += s.cooling;
      if (!s.draining) sum.available += s.available;
      sum.unconfirmed += s.unconfirmed ?? 0;
    }
    const { unconfirmed, ...counts } = sum;
    return { ...counts, ...(unconfirmed > 0 ? { unconfirmed } : {}), enis: this.#enis.size };
  }

  /** Per-ENI stats, by device number. */
  eniStats(now: number): EniStats[] {
    return this.#sortedEntries().map(({ eni, addresses }) => {
      let assigned = 0;
      let cooling = 0;
      let unconfirmed = 0;
      for (const [ip, state] of addresses) {
        if (state.kind === 'assigned') assigned++;
        else if (this.#unconfirmed.has(ip)) unconfirmed++;
        else if (state.kind === 'cooling' && !this.#cooled(state, now)) cooling++;
      }
      const total = addresses.size;
      return {
        eniId: eni.eniId,
        deviceNumber: eni.deviceNumber,
        draining: this.#draining.has(eni.eniId),
        total,
        assigned,
        cooling,
        available: total - assigned - cooling - unconfirmed,
        ...(unconfirmed > 0 ? { unconfirmed } : {}),
      };
    });
  }

  /**
   * Up to `count` available addresses to give back to the cloud, all on one ENI (one
   * unassign call): the highest device number that has any, since allocate fills from the
   * lowest. Never an assigned or still-cooling address. With `eniId`, that ENI's (a draining one's).
   */
  excessFree(count: number, now: number, eniId?: string): { eni: PoolEni; ips: string[] } | undefined {
    if (count <= 0) return undefined;
    const from =
      eniId === undefined
        ? this.#sortedEntries()
            .reverse()
            .filter((e) => !this.#draining.has(e.eni.eniId))
        : [this.#entry(eniId)];
    for (const { eni, addresses } of from) {
      const ips = [...addresses]
        .filter(([ip, s]) => !this.#unconfirmed.has(ip) && (s.kind === 'free' || this.#cooled(s, now)))
        .map(([ip]) => ip)
        .slice(0, count);
      if (ips.length > 0) return { eni, ips };
    }
    return undefined;
  }

  /** ENIs by device number. */
  enis(): PoolEni[] {
    return this.#sortedEntries().map((e) => e.eni);
  }

  eni(eniId: string): PoolEni | undefined {
    return this.#enis.get(eniId)?.eni;
  }

  addresses(eniId: string): ReadonlyMap<string, AddressState> {
    return new Map(this.#entry(eniId).addresses);
  }

  state(ip: string): AddressState | undefined {
    return this.#lookup(ip).state;
  }

  /** The ENI an address of the pool is on. */
  eniIdOf(ip: string): string | undefined {
    return this.#eniOfIp.get(ip);
  }

  /** The address held by `owner`, if any. */
  addressOf(owner: string): string | undefined {
    return this.#ipOfOwner.get(owner);
  }

  #lookup(ip: string): { entry: EniEntry | undefined; state: AddressState | undefined } {
    const eniId = this.#eniOfIp.get(ip);
    const entry = eniId === undefined ? undefined : this.#enis.get(eniId);
    return { entry, state: entry?.addresses.get(ip) };
  }

  #changed(eniId: string, ips: readonly string[], wholeEni: boolean): void {
    for (const listener of this.#listeners) listener(eniId, ips, wholeEni);
  }

  #cooled(state: AddressState, now: number): boolean {
    return state.kind === 'cooling' && now - state.freedAt >= this.#cooldownMs;
  }

  #entry(eniId: string): EniEntry {
    const entry = this.#enis.get(eniId);
    if (!entry) throw new Error(`ENI ${eniId} is not in the pool`);
    return entry;
  }

  #eniOf(ip: string): PoolEni {
    return this.#entry(this.#eniOfIp.get(ip) ?? '').eni;
  }

  #sortedEntries(): EniEntry[] {
    return [...this.#enis.values()].sort((a, b) => a.eni.deviceNumber - b.eni.deviceNumber);
  }
}
