// Address allocation inside one subnet: never an AWS-reserved address, never one in use.
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

export class SubnetPool {
  readonly spec: SubnetSpec;
  readonly cidr: Ipv4Cidr;
  readonly gateway: string;
  readonly #inUse = new Set<number>();

  constructor(spec: SubnetSpec) {
    this.spec = spec;
    this.cidr = parseCidr(spec.cidr);
    this.gateway = formatIpv4(routerAddress(this.cidr));
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

  release(ips: readonly string[]): void {
    for (const ip of ips) this.#inUse.delete(parseIpv4(ip));
  }
}
