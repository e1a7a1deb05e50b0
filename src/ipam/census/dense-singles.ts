// Secondary IPs (/32s) named rather than counted: when the subnet has a fresh census, the pool
// asks EC2 for exactly the addresses the census says break the fewest whole /28s
// (CensusView.namedAddressOrder) with PrivateIpAddress.N, where upstream asks for a count and EC2
// picks at random, breaking clean blocks a prefix-delegating node could have had. Another tenant
// may take an address after the census was read: EC2 then refuses the call (InvalidParameterValue
// naming it), and the pool tries the next ones; after a few refusals in a row it asks by count.
import { CloudError } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolParts } from '../pool/pool-parts.ts';

/** What it uses of the pool's parts (built before them: the parts carry it). */
type DenseDeps = Pick<PoolParts, 'cloud' | 'pool' | 'log'>;

import type { SubnetCensusSource } from './census-source.ts';

/** Named calls refused in a row before one /32 assignment is asked by count instead. */
const NAMED_TRIES = 3;

const IPV4_IN_TEXT = /\b(\d{1,3}(?:\.\d{1,3}){3})\b/g;

export interface DenseFigures {
  /** Addresses assigned by name (census-guided). */
  readonly named: number;
  /** Named calls EC2 refused because an address was taken since the census. */
  readonly collisions: number;
  /** Addresses assigned by count (no fresh census, or the named tries ran out). */
  readonly counted: number;
}

export class DenseSingles {
  readonly #p: DenseDeps;
  readonly #census: SubnetCensusSource | undefined;
  readonly #random: () => number;
  /** Addresses EC2 refused by name, with the census they were picked from (forgotten on a newer one). */
  readonly #refused = new Map<string, number>();
  #named = 0;
  #collisions = 0;
  #counted = 0;

  constructor(parts: DenseDeps, census: SubnetCensusSource | undefined, random: () => number = Math.random) {
    this.#p = parts;
    this.#census = census;
    this.#random = random;
  }

  figures(): DenseFigures {
    return { named: this.#named, collisions: this.#collisions, counted: this.#counted };
  }

  /** Assigns `count` secondary IPs to the ENI: named from the census when it can, else by count. */
  async assign(eniId: string, subnetId: string, count: number): Promise<string[]> {
    const view = this.#census?.places === true ? this.#census.view(subnetId) : undefined;
    if (view !== undefined) {
      const takenAt = view.census.takenAt;
      for (const [ip, at] of this.#refused) if (at < takenAt) this.#refused.delete(ip);
      for (let tries = 0; tries < NAMED_TRIES; tries++) {
        const picks = view
          .namedAddressOrder(
            (ip) => this.#p.pool.eniIdOf(ip) !== undefined || this.#refused.has(ip),
            this.#random,
          )
          .slice(0, count);
        if (picks.length === 0) break;
        try {
          const ips = await this.#p.cloud.assignNamedPrivateIps(eniId, picks);
          this.#named += ips.length;
          return ips;
        } catch (err) {
          if (!(err instanceof CloudError && err.code === 'InvalidParameterValue')) throw err;
          this.#collisions++;
          // EC2 names the address it refused; when it does not, none of the picks is tried again.
          const named = [...err.message.matchAll(IPV4_IN_TEXT)]
            .map((m) => m[1])
            .filter((ip) => picks.includes(ip!));
          for (const ip of named.length > 0 ? named : picks) this.#refused.set(ip!, takenAt);
          this.#p.log.info('a named address was taken since the census; trying the next ones', {
            eni: eniId,
            subnet: subnetId,
            error: cloudErrorText(err),
          });
        }
      }
    }
    const ips = await this.#p.cloud.assignPrivateIps(eniId, count);
    this.#counted += ips.length;
    return ips;
  }
}
