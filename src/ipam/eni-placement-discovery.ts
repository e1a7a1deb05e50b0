// Subnet discovery (ENABLE_SUBNET_DISCOVERY), as upstream: the candidates are the subnets of the
// node's VPC and zone that carry the tag key `kubernetes.io/role/cni` (whatever its value), plus
// the primary ENI's subnet, which always qualifies; the one with the most free addresses wins
// (the primary subnet on a tie). Security groups are the primary ENI's.
import type { Cloud, InstanceMetadata, SubnetInfo } from '../cloud/cloud.ts';
import { cloudErrorText } from './cloud-error-text.ts';
import { EniPlacementError, type EniPlacer } from './eni-placement.ts';

export const SUBNET_DISCOVERY_TAG = 'kubernetes.io/role/cni';

/**
 * The subnet for the next ENI among `subnets` (DescribeSubnets of the node's zone); throws
 * EniPlacementError when the primary subnet is not among them or no candidate has a free address.
 */
export function chooseDiscoveredSubnet(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
): SubnetInfo {
  const primary = subnets.find((s) => s.subnetId === metadata.subnetId);
  if (primary === undefined) {
    throw new EniPlacementError(
      `subnet discovery: DescribeSubnets of ${metadata.availabilityZone} does not list the primary ENI's subnet ${metadata.subnetId}`,
    );
  }
  const candidates = subnets.filter(
    (s) => s.subnetId === primary.subnetId || (s.vpcId === primary.vpcId && SUBNET_DISCOVERY_TAG in s.tags),
  );
  const best = candidates.reduce((a, b) => (b.availableIpCount > a.availableIpCount ? b : a), primary);
  if (best.availableIpCount < 1) {
    const shown = candidates.map((s) => `${s.subnetId} ${s.availableIpCount}`).join(', ');
    throw new EniPlacementError(
      `subnet discovery: no subnet of ${metadata.availabilityZone} has a free address (free: ${shown})`,
    );
  }
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
      const chosen = chooseDiscoveredSubnet(subnets, metadata);
      return {
        subnetId: chosen.subnetId,
        subnetCidr: chosen.cidr,
        securityGroupIds: metadata.securityGroupIds,
        reason: `subnet discovery (${chosen.availableIpCount} free addresses)`,
      };
    },
  };
}
