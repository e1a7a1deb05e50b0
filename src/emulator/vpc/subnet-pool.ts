// Address allocation inside one subnet: never an AWS-reserved address, never one in use, never a
// /32 of a CIDR reservation unless it is asked for by name (subnet-reservations.ts).
// /28 prefixes (prefix delegation) need 16 aligned free addresses, none of them reserved, so a
// subnet with free addresses scattered over every block has none to give (InsufficientCidrBlocks).
// EC2 picks the addresses it assigns by count at random (AWS says so, and peers see it: cilium
// #38499); a subnet given a random source does the same, otherwise it takes the lowest, which keeps
// the addresses a test sees predictable.
import {
  AWS_RESERVED_PER_SUBNET,
  cidrContains,
  formatIpv4,
  type Ipv4Cidr,
  isAwsReserved,
  isIpv4,
  parseCidr,
  parseIpv4,
  routerAddress,
} from '../../infra/ipv4.ts';
import type { SubnetSpec } from '../api.ts';
import { Ec2Error, invalidParameter } from '../ec2/error.ts';
import type { RandomSource } from './ids.ts';
import { type CidrReservation, SubnetReservations } from './subnet-reservations.ts';

/** Addresses in an IPv4 prefix EC2 delegates to an ENI (/28). */
export const PREFIX_SIZE = 16;

/** How an address is asked for: by count (EC2 picks), by name (/32), or inside a named /28. */
type Claim = 'address' | 'prefix';

export class SubnetPool {
  readonly spec: SubnetSpec;
  readonly cidr: Ipv4Cidr;
  readonly gateway: string;
  /**
   * The subnet's tags now: the spec's at creation, then CreateTags and DeleteTags. Live in the
   * stale-read fault's snapshots too, as the free count is.
   */
  readonly tags: Map<string, string>;
  readonly reservations: SubnetReservations;
  readonly #inUse = new Set<number>();
  /** Set: addresses assigned by count are picked at random from it, as EC2 picks them. */
  #random: RandomSource | undefined;

  constructor(spec: SubnetSpec) {
    this.spec = spec;
    this.cidr = parseCidr(spec.cidr);
    this.gateway = formatIpv4(routerAddress(this.cidr));
    this.tags = new Map(Object.entries(spec.tags ?? {}));
    this.reservations = new SubnetReservations(spec.subnetId, this.cidr);
  }

  /** EC2's AvailableIpAddressCount: usable addresses nothing holds (reservations are not subtracted). */
  get availableCount(): number {
    return this.cidr.size - AWS_RESERVED_PER_SUBNET - this.#inUse.size;
  }

  /** From now on, addresses assigned by count are picked at random with `random`, as EC2 does. */
  pickAtRandom(random: RandomSource): void {
    this.#random = random;
  }

  isInUse(ip: string): boolean {
    return this.#inUse.has(parseIpv4(ip));
  }

  /** Addresses EC2 may pick on its own: free, usable, outside every CIDR reservation; all or nothing. */
  allocate(count: number): string[] {
    const candidates: number[] = [];
    for (let a = this.cidr.network; a < this.cidr.network + this.cidr.size; a++) {
      if (!isAwsReserved(this.cidr, a) && !this.#inUse.has(a) && this.reservations.of(a) === undefined)
        candidates.push(a);
    }
    if (count > candidates.length) {
      throw new Ec2Error(
        'InsufficientFreeAddressesInSubnet',
        `The specified subnet ${this.spec.subnetId} does not have enough free addresses to satisfy the request.`,
      );
    }
    const out = this.#random === undefined ? candidates.slice(0, count) : this.#sample(candidates, count);
    for (const a of out) this.#inUse.add(a);
    return out.map(formatIpv4);
  }

  /** `count` of `candidates` at random (a partial Fisher-Yates shuffle), lowest first. */
  #sample(candidates: number[], count: number): number[] {
    const random = this.#random ?? Math.random;
    for (let i = 0; i < count; i++) {
      const j = i + Math.floor(random() * (candidates.length - i));
      [candidates[i], candidates[j]] = [candidates[j]!, candidates[i]!];
    }
    return candidates.slice(0, count).sort((a, b) => a - b);
  }

  /** Reserve the given addresses (PrivateIpAddress.N, a named primary IP); all or nothing. */
  claim(ips: readonly string[], as: Claim = 'address'): void {
    const values = ips.map((ip) => {
      if (!isIpv4(ip)) throw invalidParameter(`Invalid private IP address: ${ip}`);
      const a = parseIpv4(ip);
      if (!cidrContains(this.cidr, a) || isAwsReserved(this.cidr, a)) {
        throw invalidParameter(`Address ${ip} is not a usable address of subnet ${this.spec.subnetId}`);
      }
      // A prefix reservation serves prefix delegation alone: no /32 is assigned there by name.
      const inUse = this.#inUse.has(a) || (as === 'address' && this.reservations.of(a)?.type === 'prefix');
      if (inUse) {
        throw new Ec2Error(
          'InvalidParameterValue',
          `Address ${ip} is in subnet's reserved address range or already in use`,
        );
      }
      return a;
    });
    if (new Set(values).size !== values.length) throw invalidParameter('Duplicate private IP address');
    for (const a of values) this.#inUse.add(a);
  }

  /**
   * An aligned /28 whose 16 addresses are all free and usable, taken whole: the lowest of a prefix
   * reservation first, as EC2 delegates from those first, then the lowest outside every reservation.
   */
  allocatePrefix(): string {
    const first = this.cidr.network;
    const free: number[] = [];
    for (let block = first; block + PREFIX_SIZE <= first + this.cidr.size; block += PREFIX_SIZE) {
      if (this.#blockFree(block)) free.push(block);
    }
    const reserved = free.find((b) => this.reservations.of(b)?.type === 'prefix');
    const block = reserved ?? free.find((b) => !this.#blockReserved(b));
    if (block === undefined) {
      throw new Ec2Error(
        'InsufficientCidrBlocks',
        `The specified subnet ${this.spec.subnetId} does not have enough contiguous free address blocks (/28) to satisfy the request.`,
      );
    }
    for (let a = block; a < block + PREFIX_SIZE; a++) this.#inUse.add(a);
    return `${formatIpv4(block)}/28`;
  }

  /** Take a named /28 (Ipv4Prefix.N, or the rollback of a release); all or nothing. */
  claimPrefix(prefix: string): void {
    this.claim(prefixAddresses(prefix), 'prefix');
  }

  releasePrefix(prefix: string): void {
    this.release(prefixAddresses(prefix));
  }

  /** Whether any address of the /28 at `block` lies in a CIDR reservation. */
  #blockReserved(block: number): boolean {
    for (let a = block; a < block + PREFIX_SIZE; a++) if (this.reservations.of(a) !== undefined) return true;
    return false;
  }

  #blockFree(block: number): boolean {
    for (let a = block; a < block + PREFIX_SIZE; a++) {
      if (isAwsReserved(this.cidr, a) || this.#inUse.has(a)) return false;
    }
    return true;
  }

  release(ips: readonly string[]): void {
    for (const ip of ips) this.#inUse.delete(parseIpv4(ip));
  }

  /**
   * Ground truth for a census (tests, benches): the /28s a prefix-delegating node could still
   * get here, in order: aligned, all 16 addresses free and usable, none in an `explicit`
   * reservation (EC2 delegates nothing out of one on its own).
   */
  freePrefixBlocks(): string[] {
    const out: string[] = [];
    const first = this.cidr.network;
    for (let block = first; block + PREFIX_SIZE <= first + this.cidr.size; block += PREFIX_SIZE) {
      if (!this.#blockFree(block)) continue;
      if (this.#explicitIn(block, PREFIX_SIZE)) continue;
      out.push(`${formatIpv4(block)}/28`);
    }
    return out;
  }

  /**
   * Ground truth: addresses a pod here could still be given: free, usable, outside every
   * `explicit` reservation (those of a `prefix` one count: prefix delegation hands them out).
   */
  freeAddressCount(): number {
    let n = 0;
    for (let a = this.cidr.network; a < this.cidr.network + this.cidr.size; a++) {
      if (!isAwsReserved(this.cidr, a) && !this.#inUse.has(a) && !this.#explicitIn(a, 1)) n++;
    }
    return n;
  }

  #explicitIn(start: number, size: number): boolean {
    for (let a = start; a < start + size; a++) if (this.reservations.of(a)?.type === 'explicit') return true;
    return false;
  }

  /** The addresses of `range` that are free and usable (admin: what a tenant may take). */
  freeIn(range: readonly number[]): number[] {
    return range.filter((a) => !isAwsReserved(this.cidr, a) && !this.#inUse.has(a));
  }

  reservation(reservationId: string): CidrReservation | undefined {
    return this.reservations.list().find((r) => r.reservationId === reservationId);
  }
}

/** The 16 addresses of a /28 prefix, lowest first. */
export function prefixAddresses(prefix: string): string[] {
  const cidr = parseCidr(prefix);
  if (cidr.prefixLength !== 28)
    throw invalidParameter(`Invalid IPv4 prefix ${prefix}: only /28 is delegated`);
  return Array.from({ length: PREFIX_SIZE }, (_, i) => formatIpv4(cidr.network + i));
}
