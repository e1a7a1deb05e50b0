// Address allocation inside one subnet: never an AWS-reserved address, never one in use.
// /28 prefixes (prefix delegation) need 16 aligned free addresses, none of them reserved, so a
// subnet with free addresses scattered over every block has none to give (InsufficientCidrBlocks).
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

/** Addresses in an IPv4 prefix EC2 delegates to an ENI (/28). */
export const PREFIX_SIZE = 16;

export class SubnetPool {
  readonly spec: SubnetSpec;
  readonly cidr: Ipv4Cidr;
  readonly gateway: string;
  /**
   * The subnet's tags now: the spec's at creation, then CreateTags and DeleteTags. Live in the
   * stale-read fault's snapshots too, as the free count is.
   */
  readonly tags: Map<string, string>;
  readonly #inUse = new Set<number>();
  /** Addresses taken by `fragment()` (admin), given back by `unfragment()`. */
  readonly #fragmenting = new Set<number>();

  constructor(spec: SubnetSpec) {
    this.spec = spec;
    this.cidr = parseCidr(spec.cidr);
    this.gateway = formatIpv4(routerAddress(this.cidr));
    this.tags = new Map(Object.entries(spec.tags ?? {}));
  }

  get availableCount(): number {
    return this.cidr.size - AWS_RESERVED_PER_SUBNET - this.#inUse.size;
  }

  isInUse(ip: string): boolean {
    return this.#inUse.has(parseIpv4(ip));
  }

  /** Lowest free addresses; all or nothing. */
  allocate(count: number): string[] {
    if (count > this.availableCount) {
      throw new Ec2Error(
        'InsufficientFreeAddressesInSubnet',
        `The specified subnet ${this.spec.subnetId} does not have enough free addresses to satisfy the request.`,
      );
    }
    const out: number[] = [];
    for (let a = this.cidr.network; out.length < count && a < this.cidr.network + this.cidr.size; a++) {
      if (!isAwsReserved(this.cidr, a) && !this.#inUse.has(a)) out.push(a);
    }
    for (const a of out) this.#inUse.add(a);
    return out.map(formatIpv4);
  }

  /** Reserve the given addresses; all or nothing. */
  claim(ips: readonly string[]): void {
    const values = ips.map((ip) => {
      if (!isIpv4(ip)) throw invalidParameter(`Invalid private IP address: ${ip}`);
      const a = parseIpv4(ip);
      if (!cidrContains(this.cidr, a) || isAwsReserved(this.cidr, a)) {
        throw invalidParameter(`Address ${ip} is not a usable address of subnet ${this.spec.subnetId}`);
      }
      if (this.#inUse.has(a)) {
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

  /** The lowest aligned /28 whose 16 addresses are all free and usable; taken whole. */
  allocatePrefix(): string {
    const first = this.cidr.network;
    for (let block = first; block + PREFIX_SIZE <= first + this.cidr.size; block += PREFIX_SIZE) {
      if (this.#blockFree(block)) {
        for (let a = block; a < block + PREFIX_SIZE; a++) this.#inUse.add(a);
        return `${formatIpv4(block)}/28`;
      }
    }
    throw new Ec2Error(
      'InsufficientCidrBlocks',
      `The specified subnet ${this.spec.subnetId} does not have enough contiguous free address blocks (/28) to satisfy the request.`,
    );
  }

  /** Take a given /28 back (rollback of a release); all or nothing. */
  claimPrefix(prefix: string): void {
    this.claim(prefixAddresses(prefix));
  }

  releasePrefix(prefix: string): void {
    this.release(prefixAddresses(prefix));
  }

  /**
   * Admin: take one free address in the middle of every /28 block, so that the subnet keeps free
   * addresses but has no whole block left. Returns how many were taken.
   */
  fragment(): number {
    let taken = 0;
    for (
      let a = this.cidr.network + PREFIX_SIZE / 2;
      a < this.cidr.network + this.cidr.size;
      a += PREFIX_SIZE
    ) {
      if (!isAwsReserved(this.cidr, a) && !this.#inUse.has(a)) {
        this.#inUse.add(a);
        this.#fragmenting.add(a);
        taken++;
      }
    }
    return taken;
  }

  /** Admin: give back what `fragment()` took. */
  unfragment(): void {
    for (const a of this.#fragmenting) this.#inUse.delete(a);
    this.#fragmenting.clear();
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
}

/** The 16 addresses of a /28 prefix, lowest first. */
export function prefixAddresses(prefix: string): string[] {
  const cidr = parseCidr(prefix);
  if (cidr.prefixLength !== 28)
    throw invalidParameter(`Invalid IPv4 prefix ${prefix}: only /28 is delegated`);
  return Array.from({ length: PREFIX_SIZE }, (_, i) => formatIpv4(cidr.network + i));
}
