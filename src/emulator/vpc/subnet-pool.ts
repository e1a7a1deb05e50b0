// Address allocation inside one subnet: never an AWS-reserved address, never one in use.
import type { SubnetSpec } from '../api.ts';
import { Ec2Error, invalidParameter } from '../ec2/error.ts';
import {
  type Cidr,
  cidrContains,
  formatIpv4,
  gatewayOf,
  isAwsReserved,
  parseCidr,
  parseIpv4,
} from './ipv4.ts';

export class SubnetPool {
  readonly spec: SubnetSpec;
  readonly cidr: Cidr;
  readonly gateway: string;
  readonly #inUse = new Set<number>();

  constructor(spec: SubnetSpec) {
    this.spec = spec;
    this.cidr = parseCidr(spec.cidr);
    this.gateway = gatewayOf(this.cidr);
  }

  get availableCount(): number {
    return this.cidr.size - 5 - this.#inUse.size;
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
      let a: number;
      try {
        a = parseIpv4(ip);
      } catch {
        throw invalidParameter(`Invalid private IP address: ${ip}`);
      }
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
