// Addresses and prefixes named rather than counted. When the subnet has a fresh census the pool
// asks EC2 for exactly what the census says is free: /28s picked at random among the whole blocks
// (Ipv4Prefix.N), secondary IPs and new ENIs' primary IPs inside already-broken /28s, in an order
// of blocks of this node's own (CensusView.namedAddressOrder; PrivateIpAddress.N,
// PrivateIpAddress), so the cluster's nodes fill different blocks. Upstream asks for a count
// and EC2 picks: a prefix ask fails with InsufficientCidrBlocks when no /28 is left, and /32s land
// at random, breaking blocks a prefix-delegating node could have had. Another tenant (another
// node) may take what the census showed free: EC2 then refuses the call naming the address
// (InvalidParameterValue, InvalidIPAddress.InUse), the block is set aside until a newer census, and
// the next pick is tried; after a few refusals in a row the pool asks by count.
import { CloudError } from '../../cloud/cloud.ts';
import { parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import type { SubnetCensusSource } from './census-source.ts';
import type { CensusView } from './subnet-census.ts';

/** What it uses of the pool's parts (built before them: the parts carry it). */
type AssignerDeps = Pick<PoolParts, 'cloud' | 'pool' | 'registry' | 'log'>;

/** Named calls refused in a row before the pool asks by count instead. */
const NAMED_TRIES = 3;

const IPV4_IN_TEXT = /\b(\d{1,3}(?:\.\d{1,3}){3})\b/g;
/** EC2's codes for a named address someone holds. */
const TAKEN = new Set(['InvalidParameterValue', 'InvalidIPAddress.InUse']);

export interface CensusAssignFigures {
  /** Secondary IPs assigned by name (census-guided). */
  readonly named: number;
  /** Named calls EC2 refused because something was taken since the census. */
  readonly collisions: number;
  /** Secondary IPs assigned by count (no fresh census, or the named tries ran out). */
  readonly counted: number;
  /** /28s assigned by name from the census. */
  readonly namedPrefixes: number;
  /** New ENIs whose primary IP was named inside a broken /28. */
  readonly namedPrimaries: number;
}

/** What a named prefix ask came to: assigned, no free /28 per the census, or no census to ask by. */
export type NamedPrefixes =
  | { readonly kind: 'assigned'; readonly prefixes: string[] }
  | { readonly kind: 'none'; readonly why: string }
  | { readonly kind: 'noCensus' };

export class CensusAssigner {
  readonly #p: AssignerDeps;
  readonly #census: SubnetCensusSource | undefined;
  readonly #random: () => number;
  /** This node's own order of /28 blocks (a salted hash), stable from one call to the next. */
  readonly #rank: (block: number) => number;
  /** Blocks (/28 network addresses) EC2 refused something of, with the census they were picked from. */
  readonly #refused = new Map<number, number>();
  #named = 0;
  #collisions = 0;
  #counted = 0;
  #namedPrefixes = 0;
  #namedPrimaries = 0;

  constructor(
    parts: AssignerDeps,
    census: SubnetCensusSource | undefined,
    random: () => number = census?.random ?? Math.random,
  ) {
    this.#p = parts;
    this.#census = census;
    this.#random = random;
    const salt = Math.floor(random() * 0x100000000);
    this.#rank = (block) => mix(block ^ salt);
  }

  figures(): CensusAssignFigures {
    return {
      named: this.#named,
      collisions: this.#collisions,
      counted: this.#counted,
      namedPrefixes: this.#namedPrefixes,
      namedPrimaries: this.#namedPrimaries,
    };
  }

  /** The census to act on for `subnetId`, with refusals of older censuses forgotten. */
  #view(subnetId: string): CensusView | undefined {
    const view = this.#census?.places === true ? this.#census.view(subnetId) : undefined;
    if (view !== undefined) {
      for (const [block, at] of this.#refused) if (at < view.census.takenAt) this.#refused.delete(block);
    }
    return view;
  }

  /**
   * What not to name: an address the pool holds, the primary IP of one of the node's ENIs (the pool
   * holds none, and a census read before the ENI existed shows it free), or one of a refused /28.
   */
  #skipper(): (ip: string) => boolean {
    const primaries = this.#p.registry.protectedAddresses();
    return (ip) =>
      this.#p.pool.eniIdOf(ip) !== undefined ||
      primaries.has(ip) ||
      this.#refused.has(blockOf(parseIpv4(ip)));
  }

  /** A refusal: the block of every address EC2 named (of `asked`), else of every address asked. */
  #refusedBy(err: CloudError, asked: readonly string[], takenAt: number, subnetId: string): void {
    this.#collisions++;
    const named = [...err.message.matchAll(IPV4_IN_TEXT)].map((m) => m[1]!);
    const askedBlocks = new Set(asked.map((a) => blockOf(parseIpv4(a.split('/')[0]!))));
    const hit = named.map((ip) => blockOf(parseIpv4(ip))).filter((b) => askedBlocks.has(b));
    for (const b of hit.length > 0 ? hit : askedBlocks) this.#refused.set(b, takenAt);
    this.#p.log.info('an address the census showed free was taken since; trying others', {
      subnet: subnetId,
      error: cloudErrorText(err),
    });
  }

  /** Assigns `count` secondary IPs to the ENI: named from the census when it can, else by count. */
  async assign(eniId: string, subnetId: string, count: number): Promise<string[]> {
    const view = this.#view(subnetId);
    if (view !== undefined) {
      for (let tries = 0; tries < NAMED_TRIES; tries++) {
        const picks = view.namedAddressOrder(this.#skipper(), this.#rank).slice(0, count);
        if (picks.length === 0) break;
        try {
          const ips = await this.#p.cloud.assignNamedPrivateIps(eniId, picks);
          this.#named += ips.length;
          return ips;
        } catch (err) {
          if (!(err instanceof CloudError && TAKEN.has(err.code))) throw err;
          this.#refusedBy(err, picks, view.census.takenAt, subnetId);
        }
      }
    }
    const ips = await this.#p.cloud.assignPrivateIps(eniId, count);
    this.#counted += ips.length;
    return ips;
  }

  /**
   * Up to `count` whole /28s the census shows free, picked at random (so nodes reading one census
   * rarely ask for the same), by name. `none` when the census shows none left, or the picks kept
   * being taken: the caller goes on as after InsufficientCidrBlocks, without having asked blindly.
   */
  async assignPrefixes(eniId: string, subnetId: string, count: number): Promise<NamedPrefixes> {
    const view = this.#view(subnetId);
    if (view === undefined) return { kind: 'noCensus' };
    const at = new Date(view.census.takenAt).toISOString();
    for (let tries = 0; tries < NAMED_TRIES; tries++) {
      const free = view.freePrefixBlocks().filter((p) => !this.#refused.has(parseCidr(p).network));
      if (free.length === 0) {
        return { kind: 'none', why: `the subnet census of ${at} shows no free /28 left in ${subnetId}` };
      }
      const picks = sample(free, Math.min(count, free.length), this.#random);
      try {
        const prefixes = await this.#p.cloud.assignNamedIpv4Prefixes(eniId, picks);
        this.#namedPrefixes += prefixes.length;
        return { kind: 'assigned', prefixes };
      } catch (err) {
        if (!(err instanceof CloudError && TAKEN.has(err.code))) throw err;
        this.#refusedBy(err, picks, view.census.takenAt, subnetId);
      }
    }
    return {
      kind: 'none',
      why: `the /28s the subnet census of ${at} showed free in ${subnetId} were taken since`,
    };
  }

  /**
   * The primary IP to name for a new ENI in `subnetId` (inside a broken /28), or undefined to let
   * EC2 pick. `refused` tells it EC2 answered that the address is taken.
   */
  primaryIpFor(
    subnetId: string,
  ): { ip: string; refused: (err: unknown) => void; used: () => void } | undefined {
    const view = this.#view(subnetId);
    const ip = view?.namedAddressOrder(this.#skipper(), this.#rank)[0];
    if (view === undefined || ip === undefined) return undefined;
    return {
      ip,
      refused: (err) => {
        if (err instanceof CloudError && TAKEN.has(err.code))
          this.#refusedBy(err, [ip], view.census.takenAt, subnetId);
      },
      used: () => {
        this.#namedPrimaries++;
      },
    };
  }
}

/** A 32-bit integer hash (murmur3's finalizer): blocks in an order of the node's own. */
function mix(x: number): number {
  let h = x >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function blockOf(a: number): number {
  return a - (a % 16);
}

/** `n` of `items` at random, in their order. */
function sample<T>(items: readonly T[], n: number, random: () => number): T[] {
  const pool = [...items];
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, n);
}
