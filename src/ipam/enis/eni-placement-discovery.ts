// Subnet discovery (ENABLE_SUBNET_DISCOVERY), as upstream: the candidates are the subnets of the
// node's VPC and zone that carry the tag key `kubernetes.io/role/cni` (whatever its value), plus
// the primary ENI's subnet, which always qualifies; the one with the most free addresses wins
// (the primary subnet on a tie). Security groups are the primary ENI's.
import type { Cloud, InstanceMetadata, SubnetInfo } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { type EniPlacement, EniPlacementError, type EniPlacer } from './eni-placement.ts';

export const SUBNET_DISCOVERY_TAG = 'kubernetes.io/role/cni';

/**
 * The candidates for the next ENI among `subnets` (DescribeSubnets of the node's zone), best first:
 * most free addresses, the primary subnet first on a tie; only those with a free address. Throws
 * EniPlacementError when the primary subnet is not among them or no candidate has a free address.
 */
export function rankDiscoveredSubnets(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
): SubnetInfo[] {
  const primary = subnets.find((s) => s.subnetId === metadata.subnetId);
  if (primary === undefined) {
    throw new EniPlacementError(
      `subnet discovery: DescribeSubnets of ${metadata.availabilityZone} does not list the primary ENI's subnet ${metadata.subnetId}`,
    );
  }
  const candidates = subnets.filter(
    (s) => s.subnetId === primary.subnetId || (s.vpcId === primary.vpcId && SUBNET_DISCOVERY_TAG in s.tags),
  );
  const isPrimary = (s: SubnetInfo) => (s.subnetId === primary.subnetId ? 1 : 0);
  const ranked = candidates
    .filter((s) => s.availableIpCount >= 1)
    .sort((a, b) => b.availableIpCount - a.availableIpCount || isPrimary(b) - isPrimary(a));
  if (ranked.length === 0) {
    const shown = candidates.map((s) => `${s.subnetId} ${s.availableIpCount}`).join(', ');
    throw new EniPlacementError(
      `subnet discovery: no subnet of ${metadata.availabilityZone} has a free address (free: ${shown})`,
    );
  }
  return ranked;
}

/** The best candidate (rankDiscoveredSubnets). */
export function chooseDiscoveredSubnet(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
): SubnetInfo {
  const [best] = rankDiscoveredSubnets(subnets, metadata);
  if (best === undefined) throw new EniPlacementError('subnet discovery: no candidate subnet');
  return best;
}

export function discoveredSubnetPlacer(cloud: Cloud, metadata: InstanceMetadata): EniPlacer {
  return {
    primaryEniCarriesPods: true,
    async next() {
      let subnets: SubnetInfo[];
      try {
        subnets = await cloud.describeSubnets({ availabilityZone: metadata.availabilityZone });
      } catch (err) {
        throw new Error(
          `subnet discovery: cannot describe the subnets of ${metadata.availabilityZone}: ${cloudErrorText(err)}`,
          { cause: err },
        );
      }
      const placements = rankDiscoveredSubnets(subnets, metadata).map(
        (s): EniPlacement => ({
          subnetId: s.subnetId,
          subnetCidr: s.cidr,
          securityGroupIds: metadata.securityGroupIds,
          reason: `subnet discovery (${s.availableIpCount} free addresses)`,
        }),
      );
      const [best, ...rest] = placements;
      if (best === undefined) throw new EniPlacementError('subnet discovery: no candidate subnet');
      return rest.length === 0 ? best : { ...best, fallbacks: rest };
    },
  };
}
