// Per subnet: the free addresses EC2 counts, and the aligned /28 blocks prefix delegation could
// still take, worked out from every ENI of the VPC (their primary and secondary addresses and
// delegated prefixes) and AWS's five reserved addresses. Subnet CIDR reservations are not read
// (one call more per subnet), so a /28 counted free may be reserved.
import { formatCidr, isAwsReserved, isIpv4, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import type { Ec2Eni, Ec2Subnet } from './model.ts';

export interface SubnetCapacity {
  readonly subnetId: string;
  readonly cidr: string;
  readonly availabilityZone: string;
  /** EC2's AvailableIpAddressCount. */
  readonly freeAddresses: number;
  /** Aligned /28 blocks with no address taken or reserved. */
  readonly free28s: number;
  /** ENIs of the VPC in this subnet. */
  readonly enis: number;
  readonly tags: Readonly<Record<string, string>>;
}

const BLOCK = 16;

export function subnetCapacity(subnets: readonly Ec2Subnet[], enis: readonly Ec2Eni[]): SubnetCapacity[] {
  return subnets.map((s) => {
    const range = parseCidr(s.cidr);
    const { size, network: start } = range;
    const taken = new Set<number>();
    const inSubnet = enis.filter((e) => e.subnetId === s.subnetId);
    for (const e of inSubnet) {
      for (const ip of [e.primaryIp, ...e.secondaryIps])
        if (ip !== undefined && isIpv4(ip)) taken.add(parseIpv4(ip));
      for (const p of e.ipv4Prefixes) {
        const prefix = parseCidr(p);
        for (let k = 0; k < BLOCK; k++) taken.add(prefix.network + k);
      }
    }
    let free28s = 0;
    for (let block = start; block + BLOCK <= start + size; block += BLOCK) {
      let free = true;
      for (let a = block; a < block + BLOCK && free; a++)
        if (taken.has(a) || isAwsReserved(range, a)) free = false;
      if (free) free28s++;
    }
    return {
      subnetId: s.subnetId,
      cidr: formatCidr(range),
      availabilityZone: s.availabilityZone,
      freeAddresses: s.availableIpCount,
      free28s,
      enis: inSubnet.length,
      tags: s.tags,
    };
  });
}
