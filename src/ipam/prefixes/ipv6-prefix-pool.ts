// The IPv6 address source (ENABLE_IPv6=true): every pod gets one address out of the /80 on the
// primary ENI (ipv6-prefix-claim.ts), no ENI growth and no warm targets, as upstream. A cursor
// walks the /80 forward, so an address is rarely handed out twice at all; the ones pods hold (the
// ledger's vpcAddress resources, rebuilt at start) and the ones cooling down (IP_COOLDOWN_PERIOD,
// kept in the ledger's cooldown records) are skipped, and the /80's first address never leaves
// (some stacks treat it as the subnet-router anycast address).
import { formatIpv6, ipv6CidrContains, isIpv6, parseIpv6, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import { attachmentKeyString } from '../../plan/attachment.ts';
import { MAIN_TABLE } from '../../plan/views.ts';
import type { PoolLedger } from '../pool/pool-addresses.ts';
import { claimIpv6Prefix, type Ipv6PrefixClaim, type Ipv6PrefixClaimDeps } from './ipv6-prefix-claim.ts';

export interface Ipv6PrefixPoolDeps extends Omit<Ipv6PrefixClaimDeps, 'heldAddresses'> {
  readonly ledger: PoolLedger | undefined;
  /**
   * Addresses of pods recovered from the node after a lost ledger (recovered records); held too,
   * also those recorded while the /80 was unknown, which the ledger's assignments leave out.
   */
  readonly recoveredAddresses?: () => readonly { readonly ip: string; readonly owner: string }[];
  readonly clock: { now(): number };
  readonly cooldownMs: number;
}

/** The pool section of the agent's state in IPv6 mode. */
export interface Ipv6PoolView {
  readonly mode: 'ipv6-prefix';
  readonly prefix: string | null;
  readonly eniId: string | null;
  readonly assigned: number;
  readonly cooling: number;
  /** Why pods get no IPv6 address (code 11), while they do not. */
  readonly problem: string | null;
}

const HOSTS_PER_PREFIX = 1n << 48n;
/** How far one allocation looks past taken addresses before it gives up (the /80 is 2^48 long). */
const MAX_PROBES = 65_536;

/** An address as the agent's AddressSource hands it out (the agent's interface, met structurally). */
export interface Ipv6PooledAddress {
  readonly ip: string;
  readonly eniId: string;
  readonly routeTable: number;
}

export class Ipv6PrefixPool {
  readonly #d: Ipv6PrefixPoolDeps;
  #claim: Ipv6PrefixClaim | undefined;
  #claiming: Promise<void> | undefined;
  /** ip -> owner (attachment key) */
  readonly #assigned = new Map<string, string>();
  /** ip -> freedAt (ms since epoch) */
  readonly #cooling = new Map<string, number>();
  #cursor = 1n;

  constructor(deps: Ipv6PrefixPoolDeps) {
    this.#d = deps;
  }

  /** Adopts or assigns the /80; a failure leaves the reason in view() and is retried on demand. */
  start(): Promise<void> {
    return this.#ensurePrefix();
  }

  get prefix(): string | undefined {
    return this.#claim?.kind === 'held' ? this.#claim.prefix : undefined;
  }

  allocate(owner: string): Ipv6PooledAddress | undefined {
    const claim = this.#claim;
    if (claim?.kind !== 'held') return undefined;
    for (const [ip, holder] of this.#assigned) if (holder === owner) return this.#pooled(ip, claim.eniId);
    const base = parseIpv6Cidr(claim.prefix).base;
    const now = this.#d.clock.now();
    for (let probe = 0; probe < MAX_PROBES; probe++) {
      const ip = formatIpv6(base + this.#cursor);
      this.#cursor = this.#cursor + 1n === HOSTS_PER_PREFIX ? 1n : this.#cursor + 1n;
      if (this.#assigned.has(ip) || this.#stillCooling(ip, now)) continue;
      this.#assigned.set(ip, owner);
      return this.#pooled(ip, claim.eniId);
    }
    return undefined;
  }

  /**
   * Only called after allocate() found nothing. Without a /80 the claim is tried again (bounded by
   * the deadline); with one, the /80 had no free address within reach, which waiting does not cure.
   */
  async waitForAddress(timeoutMs: number): Promise<void> {
    const claim = this.#claim;
    if (claim?.kind === 'held') throw new Error(`no free address found in the IPv6 /80 ${claim.prefix}`);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([this.#ensurePrefix(), deadline]);
    } finally {
      clearTimeout(timer);
    }
    const problem = this.#problem();
    if (problem !== undefined) throw new Error(problem);
  }

  /** The primary ENI, for an address of the held /80 (recovery of a lost ledger). */
  eniOf(ip: string): string | undefined {
    const claim = this.#claim;
    if (claim?.kind !== 'held' || !isIpv6(ip)) return undefined;
    return ipv6CidrContains(parseIpv6Cidr(claim.prefix), parseIpv6(ip)) ? claim.eniId : undefined;
  }

  /** Holds `ip` for `owner` (a pod recovered from the node); false when another owner holds it. */
  hold(ip: string, owner: string): boolean {
    const holder = this.#assigned.get(ip);
    if (holder !== undefined && holder !== owner) return false;
    this.#assigned.set(ip, owner);
    return true;
  }

  release(ip: string, eniId?: string): void {
    const now = this.#d.clock.now();
    // The cursor comes back to an address only after 2^48 others: without this sweep, cooldown
    // records that ended would stay in memory and in the ledger.
    this.#sweepCooling(now);
    this.#assigned.delete(ip);
    this.#cooling.set(ip, now);
    const onEni = eniId ?? (this.#claim?.kind === 'held' ? this.#claim.eniId : undefined);
    if (onEni !== undefined) this.#d.ledger?.addCooling(ip, onEni, now);
  }

  unreserve(ip: string): void {
    this.#assigned.delete(ip);
  }

  view(): Ipv6PoolView {
    const claim = this.#claim;
    const now = this.#d.clock.now();
    return {
      mode: 'ipv6-prefix',
      prefix: claim?.kind === 'held' ? claim.prefix : null,
      eniId: claim?.kind === 'held' ? claim.eniId : null,
      assigned: this.#assigned.size,
      cooling: [...this.#cooling.keys()].filter((ip) => this.#stillCooling(ip, now)).length,
      problem: this.#problem() ?? null,
    };
  }

  #problem(): string | undefined {
    const claim = this.#claim;
    if (claim === undefined) return 'the IPv6 /80 is still being claimed from EC2';
    return claim.kind === 'unavailable' ? `no IPv6 /80 on this node: ${claim.reason}` : undefined;
  }

  #pooled(ip: string, eniId: string): Ipv6PooledAddress {
    return { ip, eniId, routeTable: MAIN_TABLE };
  }

  #sweepCooling(now: number): void {
    for (const ip of [...this.#cooling.keys()]) this.#stillCooling(ip, now);
  }

  /** Cooling ends lazily: an expired entry goes, with its durable record, when it is next looked at. */
  #stillCooling(ip: string, now: number): boolean {
    const freedAt = this.#cooling.get(ip);
    if (freedAt === undefined) return false;
    if (now - freedAt < this.#d.cooldownMs) return true;
    this.#cooling.delete(ip);
    this.#d.ledger?.removeCooling(ip);
    return false;
  }

  /** One claim at a time; a held /80 is final, an unavailable one is tried again on the next call. */
  #ensurePrefix(): Promise<void> {
    if (this.#claim?.kind === 'held') return Promise.resolve();
    this.#claiming ??= this.#runClaim().finally(() => {
      this.#claiming = undefined;
    });
    return this.#claiming;
  }

  async #runClaim(): Promise<void> {
    const ledger = this.#d.ledger;
    const held = () => (ledger?.assignments() ?? []).map((a) => a.ip).filter(isIpv6);
    const claim = await claimIpv6Prefix({ ...this.#d, heldAddresses: held });
    if (claim.kind === 'unavailable') {
      if (this.#claim?.kind !== 'unavailable' || this.#claim.reason !== claim.reason) {
        this.#d.log.error('IPv6 pods cannot get addresses', {
          reason: claim.reason,
          retryable: claim.retryable,
        });
      }
      this.#claim = claim;
      return;
    }
    this.#claim = claim;
    this.#restore(claim.prefix);
  }

  /** The ledger's IPv6 assignments and cooldowns inside the /80 (ownership; cooldown survives restarts). */
  #restore(prefix: string): void {
    const ledger = this.#d.ledger;
    if (ledger === undefined) return;
    const cidr = parseIpv6Cidr(prefix);
    const inPrefix = (ip: string) => isIpv6(ip) && ipv6CidrContains(cidr, parseIpv6(ip));
    for (const a of ledger.assignments()) {
      if (!isIpv6(a.ip)) continue;
      if (inPrefix(a.ip)) this.#assigned.set(a.ip, attachmentKeyString(a.key));
      else
        this.#d.log.error('ledger attachment holds an IPv6 address outside the node /80', {
          ip: a.ip,
          prefix,
        });
    }
    for (const c of ledger.coolingAddresses()) if (inPrefix(c.ip)) this.#cooling.set(c.ip, c.freedAt);
    for (const r of this.#d.recoveredAddresses?.() ?? []) {
      if (inPrefix(r.ip) && !this.#assigned.has(r.ip)) this.#assigned.set(r.ip, r.owner);
    }
  }
}
