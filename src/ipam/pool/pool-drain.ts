// Draining (subnet discovery, as upstream 1.22.1 and later): the ENIs in a subnet its tags exclude
// (subnet-tags.ts: `kubernetes.io/role/cni=0`, or another cluster's) lend no new address; their
// pods keep theirs. A drained ENI vpcnet created is freed once no pod holds an address of it and
// none cools (the pool's usual rules: its minimum lifetime, the cooldown, what the ledger holds); an
// ENI that cannot be freed (the primary ENI, one vpcnet did not create) and one that still carries
// pods give their free addresses and idle /28 prefixes back to EC2 as they come free. Tags are
// read at the first pass and then every interval (one paginated DescribeSubnets); removing the tag
// ends the drain at the next read.

import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { type PrefixBook, prefixAddresses } from '../prefixes/prefixes.ts';
import { giveBack } from './give-back.ts';
import type { PoolParts } from './pool-parts.ts';
import type { PoolDecision } from './targets.ts';

/** For the agent's state: what drains and why. */
export interface DrainState {
  /** Subnet ID → why its ENIs drain, as last read. */
  readonly subnets: Readonly<Record<string, string>>;
  /** The pool's ENIs that lend no new address now. */
  readonly enis: readonly string[];
  /** ms since epoch of the last successful read of the subnets' tags. */
  readonly readAt?: number;
  /** Why the last read failed (the drain goes on as last read). */
  readonly problem?: string;
}

type DrainParts = Pick<PoolParts, 'pool' | 'cloud' | 'clock' | 'log' | 'placement'>;

export class PoolDrain {
  readonly #p: DrainParts;
  readonly #book: PrefixBook;
  readonly #intervalMs: number;
  #subnets: ReadonlyMap<string, string> = new Map();
  #dueAt: number | undefined;
  #readAt: number | undefined;
  #problem: string | undefined;

  constructor(parts: DrainParts, book: PrefixBook, intervalMs: number) {
    this.#p = parts;
    this.#book = book;
    this.#intervalMs = intervalMs;
  }

  /** Reads the subnets' tags when a read is due, then marks the pool's ENIs. */
  async refreshIfDue(): Promise<void> {
    const read = this.#p.placement.drainingSubnets;
    if (read === undefined) return;
    const now = this.#p.clock.now();
    if (this.#dueAt === undefined || now >= this.#dueAt) {
      this.#dueAt = now + this.#intervalMs;
      try {
        this.#subnets = await read();
        this.#readAt = now;
        this.#problem = undefined;
      } catch (err) {
        this.#problem = cloudErrorText(err);
        this.#p.log.warn('cannot read the subnets tags; draining goes on as last read', {
          error: this.#problem,
        });
      }
    }
    this.apply();
  }

  /** Marks each ENI of the pool as its subnet says (an ENI that joined since the read included). */
  apply(): void {
    const { pool, log } = this.#p;
    for (const eni of pool.enis()) {
      const why = this.#subnets.get(eni.subnetId);
      if (!pool.setDraining(eni.eniId, why !== undefined)) continue;
      if (why !== undefined) {
        log.info('ENI drains: it lends no new address, and goes once no pod uses it', {
          eni: eni.eniId,
          device: eni.deviceNumber,
          subnet: eni.subnetId,
          why,
        });
      } else
        log.info('ENI lends again: its subnet no longer drains', { eni: eni.eniId, subnet: eni.subnetId });
    }
  }

  /**
   * What draining asks for now, if anything: an idle drained ENI vpcnet may free (`freeable`, as
   * for any ENI), else the free addresses of a drained ENI that will not be freed soon (pods still
   * on it, or one that cannot be freed). Highest device number first.
   */
  step(freeable: ReadonlySet<string>): PoolDecision | undefined {
    const draining = this.#p.pool
      .eniStats(this.#p.clock.now())
      .filter((s) => s.draining === true)
      .reverse();
    const idle = draining.find((s) => s.assigned === 0 && s.cooling === 0 && freeable.has(s.eniId));
    if (idle !== undefined) return { kind: 'freeEni', eniId: idle.eniId };
    // An ENI about to be freed (no pod, only cooling addresses) keeps them: one detach gives all back.
    const giving = draining.find(
      (s) => !(s.assigned === 0 && freeable.has(s.eniId)) && this.#releasable(s.eniId).count > 0,
    );
    return giving === undefined ? undefined : { kind: 'drain', eniId: giving.eniId };
  }

  /** Gives the free secondary IPs and idle /28 prefixes of a drained ENI back to EC2. */
  async drain(eniId: string): Promise<PoolDecision> {
    const { pool, cloud, log } = this.#p;
    if (!pool.isDraining(eniId)) return { kind: 'none' };
    const { singles, prefixes, count } = this.#releasable(eniId);
    if (count === 0) return { kind: 'none' };
    if (singles.length > 0) {
      pool.removeAddresses(eniId, singles);
      await giveBack(
        pool,
        `give back ${singles.length} addresses of draining ENI ${eniId}`,
        eniId,
        singles,
        () => cloud.unassignPrivateIps(eniId, singles),
      );
    }
    if (prefixes.length > 0) {
      const ips = prefixes.flatMap(prefixAddresses);
      pool.removeAddresses(eniId, ips);
      this.#book.remove(eniId, prefixes);
      await giveBack(
        pool,
        `give back prefixes ${prefixes.join(', ')} of draining ENI ${eniId}`,
        eniId,
        ips,
        () => cloud.unassignIpv4Prefixes(eniId, prefixes),
        () => this.#book.add(eniId, prefixes),
      );
    }
    log.info('gave back the free addresses of a draining ENI', { eni: eniId, ips: singles, prefixes });
    return { kind: 'drain', eniId, count };
  }

  state(): DrainState {
    const { pool } = this.#p;
    return {
      subnets: Object.fromEntries(this.#subnets),
      enis: pool
        .enis()
        .filter((e) => pool.isDraining(e.eniId))
        .map((e) => e.eniId),
      ...(this.#readAt === undefined ? {} : { readAt: this.#readAt }),
      ...(this.#problem === undefined ? {} : { problem: this.#problem }),
    };
  }

  /** Free secondary IPs, and prefixes none of whose addresses is assigned or cooling. */
  #releasable(eniId: string): { singles: string[]; prefixes: string[]; count: number } {
    const addresses = this.#p.pool.addresses(eniId);
    const singles = [...addresses]
      .filter(([ip, s]) => s.kind === 'free' && this.#book.prefixOf(eniId, ip) === undefined)
      .map(([ip]) => ip);
    const prefixes = this.#book
      .prefixesOf(eniId)
      .filter((p) => prefixAddresses(p).every((ip) => addresses.get(ip)?.kind === 'free'));
    return { singles, prefixes, count: singles.length + prefixes.length };
  }
}
