// Where the next ENI goes: its subnet and security groups. The pool manager asks once per ENI it
// creates. Three answers, as upstream: the primary ENI's subnet and security groups (default);
// the node's ENIConfig (custom networking, eni-placement-custom.ts); or the subnet of the node's
// VPC and zone with the most free addresses that its tags offer (subnet discovery,
// eni-placement-discovery.ts), which also says which subnets drain (subnet-tags.ts).
// A placement that cannot be had is an EniPlacementError naming why: the pass fails, the pool's
// growth reports it blocked with that reason, and an ADD waiting for an address fails with it.
// Never a silent fallback to the node's own subnet.
import type { InstanceMetadata } from '../../cloud/cloud.ts';

export interface EniPlacement {
  readonly subnetId: string;
  readonly subnetCidr: string;
  readonly securityGroupIds: readonly string[];
  /** Why here, for the log ("primary ENI's subnet", "ENIConfig az-a", "subnet discovery"). */
  readonly reason: string;
  /**
   * Subnet discovery: the next candidates, in order, tried in the same growth attempt when
   * CreateNetworkInterface fails here for a reason of this subnet (SUBNET_SPECIFIC_CREATE_ERRORS).
   */
  readonly fallbacks?: readonly EniPlacement[];
}

/** CreateNetworkInterface errors another subnet would not have. */
export const SUBNET_SPECIFIC_CREATE_ERRORS: ReadonlySet<string> = new Set([
  'InsufficientFreeAddressesInSubnet',
  'InvalidSubnetID.NotFound',
]);

export interface PlacementOptions {
  /**
   * Subnets to try last: they answered InsufficientCidrBlocks lately (no free /28), and the pool
   * wants prefixes. A placer with one subnet to offer offers it all the same.
   */
  readonly avoidSubnets?: ReadonlySet<string>;
}

export interface EniPlacer {
  /** The placement of the next ENI, asked again for every ENI (what it reads may change). */
  next(options?: PlacementOptions): Promise<EniPlacement>;
  /**
   * Subnet discovery: the subnets whose ENIs must drain now (subnet ID → why), read from EC2.
   * Absent: nothing ever drains.
   */
  readonly drainingSubnets?: () => Promise<ReadonlyMap<string, string>>;
  /**
   * Custom networking: the primary ENI's addresses never enter the pool (its subnet is the
   * node's, not the pods'); pods get addresses of secondary ENIs only.
   */
  readonly primaryEniCarriesPods: boolean;
}

/** The next ENI cannot be placed; the message is what an operator must fix. */
export class EniPlacementError extends Error {
  override readonly name = 'EniPlacementError';
}

/** The default: the primary ENI's subnet and security groups. */
export function primarySubnetPlacer(metadata: InstanceMetadata): EniPlacer {
  const placement: EniPlacement = {
    subnetId: metadata.subnetId,
    subnetCidr: metadata.subnetCidr,
    securityGroupIds: metadata.securityGroupIds,
    reason: "the primary ENI's subnet",
  };
  return { primaryEniCarriesPods: true, next: () => Promise.resolve(placement) };
}
