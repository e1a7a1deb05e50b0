// The pool by prefixes: builds each ENI's slot view (prefix-targets.ts decides), assigns and
// releases /28 prefixes. When a subnet has no free /28 (InsufficientCidrBlocks) the prefix is asked
// of the pool's ENIs in other subnets, then of a new ENI in the next subnet subnet discovery ranks
// (as upstream moves on to the next subnet); only when none has one does the pool fall back to
// secondary IPs on the same ENIs, trying a prefix again on the pool's interval with backoff.
// Also used with prefix delegation off while ENIs still hold prefixes (a node switched back):
// those prefixes keep their pods' addresses and are given back once none of them is in use.

import { CloudError } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { giveBack } from '../pool/give-back.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import { nextPoolStep, type PoolDecision } from '../pool/targets.ts';
import { type EniSlots, prefixStep, slotsUsed, type UnitDecision } from './prefix-targets.ts';
import { PREFIX_SIZE, type PrefixBook, prefixAddresses } from './prefixes.ts';

export interface PrefixModeOptions {
  /** ENABLE_PREFIX_DELEGATION. */
  readonly enabled: boolean;
  /** WARM_PREFIX_TARGET (prefix mode only). */
  readonly warmPrefixTarget: number;
  /** First retry of a prefix after InsufficientCidrBlocks (default 5 s), doubled up to maxRetryMs (default 5 min). */
  readonly retryBaseMs?: number;
  readonly maxRetryMs?: number;
}

/** For the agent's state: whether the pool holds prefixes or had to fall back to secondary IPs. */
export interface PrefixModeState {
  readonly mode: 'prefixes' | 'secondaryIpFallback';
  /** ms since epoch the fallback began. */
  readonly fallbackSince?: number;
  readonly nextPrefixRetryAt?: number;
  readonly failedPrefixTries?: number;
}

/**
 * Attaches an ENI in a subnet outside `avoid` and returns its ID, or undefined when none can be had
 * (no device slot left, or no other subnet to offer).
 */
export type AttachOutside = (avoid: ReadonlySet<string>) => Promise<string | undefined>;

export class PrefixPool {
  readonly #p: PoolParts;
  readonly #book: PrefixBook;
  readonly #o: PrefixModeOptions;
  readonly #attachOutside: AttachOutside | undefined;
  #fallback: { since: number; retryAt: number; failures: number } | undefined;
  /** Subnets that answered InsufficientCidrBlocks: not asked for a prefix again before `until`. */
  readonly #noFreePrefix = new Map<string, { until: number; failures: number }>();
  /** Fallback episodes since start (the metric). */
  fallbacks = 0;
  /** Prefix asks not sent because the census showed the subnet without a free /28 (or its picks taken). */
  censusSkips = 0;

  constructor(parts: PoolParts, book: PrefixBook, options: PrefixModeOptions, attachOutside?: AttachOutside) {
    this.#p = parts;
    this.#book = book;
    this.#o = options;
    this.#attachOutside = attachOutside;
  }

  /** Subnets that had no free /28 lately: a new ENI for prefixes goes elsewhere if it can. */
  subnetsWithoutPrefixes(): Set<string> {
    const now = this.#p.clock.now();
    return new Set([...this.#noFreePrefix].filter(([, m]) => m.until > now).map(([id]) => id));
  }

  get enabled(): boolean {
    return this.#o.enabled;
  }

  state(): PrefixModeState {
    const f = this.#fallback;
    if (f === undefined) return { mode: 'prefixes' };
    return {
      mode: 'secondaryIpFallback',
      fallbackSince: f.since,
      nextPrefixRetryAt: f.retryAt,
      failedPrefixTries: f.failures,
    };
  }

  /**
   * The next step, or undefined when the secondary-IP pool's own decision applies (prefix
   * delegation off and no ENI holds a prefix).
   */
  decision(eniCount: number, detachable: ReadonlySet<string>): UnitDecision | undefined {
    const { limits, targets, clock } = this.#p;
    if (!this.#o.enabled && !this.#book.any()) return undefined;
    const enis = this.slots();
    if (this.#o.enabled) {
      const now = clock.now();
      const fallback = {
        active: this.#fallback !== undefined,
        probeDue: (this.#fallback?.retryAt ?? 0) <= now,
      };
      return prefixStep(
        enis,
        limits,
        { ...targets, warmPrefixTarget: this.#o.warmPrefixTarget },
        eniCount,
        detachable,
        fallback,
      );
    }
    // Prefix delegation off, prefixes left from prefix mode: a prefix none of whose addresses is in
    // use goes first; otherwise the secondary-IP targets, counting slots rather than addresses.
    if (enis.some((e) => e.prefixes.some((p) => p.inUse === 0)))
      return { kind: 'release', count: 1, unit: 'prefixes', modeCleanUp: true };
    const asSecondary = enis.map((e) => ({ ...e, total: slotsUsed(e), available: e.singlesAvailable }));
    return withUnit(nextPoolStep(asSecondary, limits, targets, eniCount, detachable));
  }

  /**
   * Addresses a new pod takes only when no other is free: secondary IPs in prefix mode (so they
   * drain and go back), prefix addresses with prefix delegation off (so prefixes drain).
   */
  secondChoice(): ((eniId: string, ip: string) => boolean) | undefined {
    if (!this.#o.enabled && !this.#book.any()) return undefined;
    const inPrefix = (eniId: string, ip: string) => this.#book.prefixOf(eniId, ip) !== undefined;
    return this.#o.enabled ? (eniId, ip) => !inPrefix(eniId, ip) : inPrefix;
  }

  /** Every pool ENI that lends (not a draining one), by slot: prefixes from the book, states from the pool. */
  slots(): EniSlots[] {
    const { pool } = this.#p;
    const lending = pool.enis().filter((eni) => !pool.isDraining(eni.eniId));
    return lending.map((eni) => {
      const prefixes = this.#book.prefixesOf(eni.eniId).map((prefix) => ({ prefix, inUse: 0 }));
      let singles = 0;
      let singlesAvailable = 0;
      let assigned = 0;
      let cooling = 0;
      const addresses = pool.addresses(eni.eniId);
      for (const [ip, state] of addresses) {
        const busy = state.kind !== 'free';
        if (state.kind === 'assigned') assigned++;
        if (state.kind === 'cooling') cooling++;
        const prefix = this.#book.prefixOf(eni.eniId, ip);
        const entry = prefixes.find((p) => p.prefix === prefix);
        if (entry !== undefined) {
          if (busy) entry.inUse++;
        } else {
          singles++;
          if (!busy) singlesAvailable++;
        }
      }
      return {
        eniId: eni.eniId,
        deviceNumber: eni.deviceNumber,
        prefixes,
        singles,
        singlesAvailable,
        assigned,
        cooling,
        available: addresses.size - assigned - cooling,
        total: addresses.size,
      };
    });
  }

  /**
   * Carries out an assign: prefixes on the lowest ENI with a free slot whose subnet has a free /28,
   * else on a new ENI in the next subnet; secondary IPs on the lowest ENI with a free slot in
   * fallback, or when no subnet has a free /28.
   */
  async assign(decision: UnitDecision & { kind: 'assign' }): Promise<PoolDecision> {
    const perEni = Math.max(this.#p.limits.ipsPerEni - 1, 0);
    const roomy = this.slots().filter((e) => slotsUsed(e) < perEni);
    const target = roomy[0];
    if (target === undefined) return { kind: 'none' };
    const room = (e: EniSlots) => perEni - slotsUsed(e);
    if (decision.unit === 'ips' || !this.#o.enabled) {
      return this.#assignIps(target.eniId, Math.min(decision.count, room(target)));
    }
    const without = this.subnetsWithoutPrefixes();
    let why: unknown = new Error(
      `no subnet of the pool's ENIs has had a free /28 lately (${[...without].join(', ')})`,
    );
    for (const eni of roomy) {
      const subnetId = this.#subnetOf(eni.eniId);
      if (without.has(subnetId)) continue;
      const got = await this.#assignPrefixes(eni.eniId, Math.min(decision.count, room(eni)));
      if (got.kind === 'assign') return got;
      without.add(subnetId);
      why = got.error;
    }
    // Every ENI with room is in a subnet without a free /28: a new ENI in the next subnet, if any.
    const added = await this.#attachOutside?.(without);
    if (added !== undefined) {
      const got = await this.#assignPrefixes(added, Math.min(decision.count, perEni));
      if (got.kind === 'assign') return got;
      why = got.error;
    }
    this.#startFallback(target.eniId, why);
    return this.#assignIps(target.eniId, Math.min(decision.count * PREFIX_SIZE, room(target)));
  }

  /**
   * One AssignPrivateIpAddresses for prefixes: named from the subnet census when there is one (no
   * call at all when it shows no free /28), by count otherwise. No /28 (the census's word, or
   * EC2's InsufficientCidrBlocks) marks the ENI's subnet.
   */
  async #assignPrefixes(
    eniId: string,
    count: number,
  ): Promise<{ kind: 'assign'; count: number } | { kind: 'noFreePrefix'; error: unknown }> {
    const subnetId = this.#subnetOf(eniId);
    let prefixes: string[];
    try {
      const named = await this.#p.singles.assignPrefixes(eniId, subnetId, count);
      if (named.kind === 'none') {
        this.censusSkips++;
        return this.#noFreePrefixIn(eniId, subnetId, new Error(named.why));
      }
      prefixes =
        named.kind === 'assigned' ? named.prefixes : await this.#p.cloud.assignIpv4Prefixes(eniId, count);
    } catch (err) {
      if (!(err instanceof CloudError && err.code === 'InsufficientCidrBlocks')) {
        throw new Error(`cannot assign ${count} prefixes to ENI ${eniId}: ${cloudErrorText(err)}`, {
          cause: err,
        });
      }
      return this.#noFreePrefixIn(eniId, subnetId, err);
    }
    this.#noFreePrefix.delete(subnetId);
    this.#p.pool.addAddresses(eniId, prefixes.flatMap(prefixAddresses));
    this.#book.add(eniId, prefixes);
    this.#p.log.info('assigned prefixes', { eni: eniId, subnet: subnetId, prefixes });
    this.#endFallback();
    return { kind: 'assign', count: prefixes.length };
  }

  /** The subnet has no free /28 now: not asked again before its wait (5 s doubling to 5 min) ends. */
  #noFreePrefixIn(eniId: string, subnetId: string, err: unknown): { kind: 'noFreePrefix'; error: unknown } {
    const failures = (this.#noFreePrefix.get(subnetId)?.failures ?? 0) + 1;
    this.#noFreePrefix.set(subnetId, { until: this.#p.clock.now() + this.#retryWait(failures), failures });
    this.#p.log.warn(
      'the subnet of this ENI has no free /28 prefix; other subnets are tried first for a while',
      {
        eni: eniId,
        subnet: subnetId,
        error: cloudErrorText(err),
      },
    );
    return { kind: 'noFreePrefix', error: err };
  }

  #subnetOf(eniId: string): string {
    return this.#p.pool.eni(eniId)?.subnetId ?? '';
  }

  /** The wait before the next try after `failures` tries without a /28: 5 s doubling to 5 min. */
  #retryWait(failures: number): number {
    return Math.min((this.#o.retryBaseMs ?? 5000) * 2 ** (failures - 1), this.#o.maxRetryMs ?? 300_000);
  }

  /** Carries out a release: free secondary IPs, or prefixes none of whose addresses is in use. */
  async release(decision: UnitDecision & { kind: 'release' }): Promise<PoolDecision> {
    return decision.unit === 'ips' ? this.#releaseIps(decision.count) : this.#releasePrefixes(decision.count);
  }

  async #assignIps(eniId: string, count: number): Promise<PoolDecision> {
    if (count <= 0) return { kind: 'none' };
    let ips: string[];
    try {
      ips = await this.#p.singles.assign(eniId, this.#subnetOf(eniId), count);
    } catch (err) {
      throw new Error(`cannot assign ${count} addresses to ENI ${eniId}: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    this.#p.pool.addAddresses(eniId, ips);
    this.#p.log.info('assigned addresses', {
      eni: eniId,
      ips,
      ...(this.#fallback ? { fallback: true } : {}),
    });
    return { kind: 'assign', count: ips.length };
  }

  async #releaseIps(count: number): Promise<PoolDecision> {
    const { pool, cloud, log } = this.#p;
    for (const eni of this.slots().reverse()) {
      const ips = [...pool.addresses(eni.eniId)]
        .filter(([ip, s]) => s.kind === 'free' && this.#book.prefixOf(eni.eniId, ip) === undefined)
        .map(([ip]) => ip)
        .slice(0, count);
      if (ips.length === 0) continue;
      pool.removeAddresses(eni.eniId, ips);
      await giveBack(pool, `release ${ips.length} addresses of ENI ${eni.eniId}`, eni.eniId, ips, () =>
        cloud.unassignPrivateIps(eni.eniId, ips),
      );
      log.info('released addresses', { eni: eni.eniId, ips });
      return { kind: 'release', count: ips.length };
    }
    return { kind: 'none' };
  }

  async #releasePrefixes(count: number): Promise<PoolDecision> {
    const { pool, cloud, log } = this.#p;
    for (const eni of this.slots().reverse()) {
      const addresses = pool.addresses(eni.eniId);
      const idle = this.#book
        .prefixesOf(eni.eniId)
        .filter((p) => prefixAddresses(p).every((ip) => addresses.get(ip)?.kind === 'free'))
        .slice(0, count);
      if (idle.length === 0) continue;
      const ips = idle.flatMap(prefixAddresses);
      // Out of the pool (and the book) before the call, so no ADD takes an address being given back.
      pool.removeAddresses(eni.eniId, ips);
      this.#book.remove(eni.eniId, idle);
      await giveBack(
        pool,
        `release prefixes ${idle.join(', ')} of ENI ${eni.eniId}`,
        eni.eniId,
        ips,
        () => cloud.unassignIpv4Prefixes(eni.eniId, idle),
        () => this.#book.add(eni.eniId, idle),
      );
      log.info('released prefixes', { eni: eni.eniId, prefixes: idle });
      return { kind: 'release', count: idle.length };
    }
    return { kind: 'none' };
  }

  #startFallback(eniId: string, err: unknown): void {
    const now = this.#p.clock.now();
    const failures = (this.#fallback?.failures ?? 0) + 1;
    const wait = this.#retryWait(failures);
    if (this.#fallback === undefined) {
      this.fallbacks++;
      this.#p.log.warn(
        'no /28 prefix can be had in any subnet the pool may use; falling back to secondary IPs until one can',
        {
          eni: eniId,
          error: cloudErrorText(err),
          retryInMs: wait,
        },
      );
    }
    this.#fallback = { since: this.#fallback?.since ?? now, retryAt: now + wait, failures };
  }

  #endFallback(): void {
    if (this.#fallback === undefined) return;
    this.#p.log.info('prefixes can be had again; secondary IPs taken in fallback go back once free', {
      fallbackMs: this.#p.clock.now() - this.#fallback.since,
    });
    this.#fallback = undefined;
  }
}

function withUnit(d: PoolDecision): UnitDecision {
  return d.kind === 'assign' || d.kind === 'release' ? { ...d, unit: 'ips' } : d;
}
