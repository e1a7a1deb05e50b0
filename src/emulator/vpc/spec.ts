// A VpcSpec checked once, at start: every subnet a /28 or larger inside the VPC CIDR, no overlaps,
// no duplicate IDs (AWS refuses all of these too).
import { cidrsOverlap, cidrWithin, parseCidr } from '../../infra/ipv4.ts';
import type { SubnetSpec, VpcSpec } from '../api.ts';
import { checkSubnetIpv6 } from './eni-ipv6.ts';
import { SubnetPool } from './subnet-pool.ts';

export function subnetPools(spec: VpcSpec): Map<string, SubnetPool> {
  const pools = new Map<string, SubnetPool>();
  for (const s of spec.subnets) addSubnetPool(pools, spec, s);
  return pools;
}

/** Adds one subnet to `pools` after the checks AWS makes (CreateSubnet, or the VPC's shape). */
export function addSubnetPool(
  pools: Map<string, SubnetPool>,
  vpc: Pick<VpcSpec, 'cidr' | 'ipv6Cidr'>,
  s: SubnetSpec,
): SubnetPool {
  const vpcCidrText = vpc.cidr;
  const vpcCidr = parseCidr(vpcCidrText);
  checkSubnetIpv6(s, vpc.ipv6Cidr);
  const pool = new SubnetPool(s);
  const c = pool.cidr;
  if (pools.has(s.subnetId)) throw new Error(`duplicate subnet ${s.subnetId}`);
  if (c.prefixLength > 28 || !cidrWithin(c, vpcCidr)) {
    throw new Error(
      `subnet ${s.subnetId} (${s.cidr}) must be a /28 or larger inside the VPC's ${vpcCidrText}`,
    );
  }
  for (const other of pools.values()) {
    if (s.ipv6Cidr !== undefined && other.spec.ipv6Cidr === s.ipv6Cidr) {
      throw new Error(`subnet ${s.subnetId}'s IPv6 CIDR ${s.ipv6Cidr} is ${other.spec.subnetId}'s too`);
    }
    if (cidrsOverlap(other.cidr, c)) {
      throw new Error(
        `subnet ${s.subnetId} (${s.cidr}) overlaps ${other.spec.subnetId} (${other.spec.cidr})`,
      );
    }
  }
  pools.set(s.subnetId, pool);
  return pool;
}
