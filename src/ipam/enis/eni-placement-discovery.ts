// Subnet discovery (ENABLE_SUBNET_DISCOVERY), as upstream: the candidates are the subnets of the
// node's VPC and zone whose tags offer them (subnet-tags.ts: the primary ENI's subnet unless tagged
// 0, any other only when tagged `kubernetes.io/role/cni` with another value, and cluster tags
// naming this cluster if any); the one with the most free addresses wins (the primary subnet on a
// tie). Security groups are the primary ENI's. One paginated DescribeSubnets per question.
//
// With ENABLE_SUBNET_DISCOVERY=false every ENI goes into the primary ENI's subnet; as upstream, not
// when that subnet is tagged 0 (primarySubnetPlacerUnlessExcluded).
import type { Cloud, InstanceMetadata, SubnetInfo } from '../../cloud/cloud.ts';
import type { SubnetCensusSource } from '../census/census-source.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import {
  type EniPlacement,
  EniPlacementError,
  type EniPlacer,
  type PlacementOptions,
  primarySubnetPlacer,
} from './eni-placement.ts';
import {
  drainReason,
  SUBNET_DISCOVERY_TAG,
  SUBNET_EXCLUDED_VALUE,
  type SubnetTagContext,
  verdictForNewEnis,
} from './subnet-tags.ts';

export { SUBNET_DISCOVERY_TAG } from './subnet-tags.ts';

/**
 * The candidates for the next ENI among `subnets` (DescribeSubnets of the node's VPC and zone),
 * best first: most free addresses, the primary subnet first on a tie, subnets in `avoid` after all
 * others; only those with a free address. Throws EniPlacementError naming each subnet that could
 * have been one and why it is not, when none is left.
 */
export function rankDiscoveredSubnets(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
  options: {
    readonly clusterName?: string | undefined;
    readonly avoid?: ReadonlySet<string>;
    /**
     * Prefix delegation with a subnet census: free aligned /28s per subnet (undefined: not
     * censused). The subnet with the most goes first, whatever EC2's free address count says.
     */
    readonly freePrefixesOf?: (subnetId: string) => number | undefined;
  } = {},
): SubnetInfo[] {
  const ctx: SubnetTagContext = { primarySubnetId: metadata.subnetId, clusterName: options.clusterName };
  const mine = subnets.filter(
    (s) => s.vpcId === metadata.vpcId && s.availabilityZone === metadata.availabilityZone,
  );
  if (!mine.some((s) => s.subnetId === metadata.subnetId)) {
    throw new EniPlacementError(
      `subnet discovery: DescribeSubnets of ${metadata.vpcId} in ${metadata.availabilityZone} does not list the primary ENI's subnet ${metadata.subnetId}`,
    );
  }
  const refused: string[] = [];
  let byTags = false;
  const candidates = mine.filter((s) => {
    const verdict = verdictForNewEnis(s, ctx);
    // Untagged subnets other than the primary's were never offered: not worth naming.
    if (!verdict.usable && (s.subnetId === metadata.subnetId || SUBNET_DISCOVERY_TAG in s.tags)) {
      refused.push(`${s.subnetId} ${verdict.why}`);
      byTags = true;
    }
    if (verdict.usable && s.availableIpCount < 1) refused.push(`${s.subnetId} has no free address`);
    return verdict.usable && s.availableIpCount >= 1;
  });
  // A subnet the census has not seen ranks between those with a free /28 and those with none.
  const prefixes = (s: SubnetInfo) => {
    if (options.freePrefixesOf === undefined) return 0;
    const n = options.freePrefixesOf(s.subnetId);
    return n === undefined ? 0.5 : n;
  };
  const rank = (s: SubnetInfo) => [
    options.avoid?.has(s.subnetId) === true ? 1 : 0,
    -prefixes(s),
    -s.availableIpCount,
    s.subnetId === metadata.subnetId ? 0 : 1,
  ];
  const ranked = candidates.sort((a, b) => {
    const [x, y] = [rank(a), rank(b)];
    return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]! || x[3]! - y[3]!;
  });
  if (ranked.length === 0) {
    throw new EniPlacementError(
      `subnet discovery: no subnet of ${metadata.vpcId} in ${metadata.availabilityZone} can take a new ENI: ${refused.join('; ')}${byTags ? `; tag one ${SUBNET_DISCOVERY_TAG}=1` : ''}`,
    );
  }
  return ranked;
}

/** The best candidate (rankDiscoveredSubnets). */
export function chooseDiscoveredSubnet(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
  clusterName?: string,
): SubnetInfo {
  const [best] = rankDiscoveredSubnets(subnets, metadata, { clusterName });
  if (best === undefined) throw new EniPlacementError('subnet discovery: no candidate subnet');
  return best;
}

/** The subnets of `subnets` whose ENIs must drain, with why (subnet-tags.ts). */
export function drainingOf(
  subnets: readonly SubnetInfo[],
  metadata: InstanceMetadata,
  clusterName?: string,
): Map<string, string> {
  const ctx: SubnetTagContext = { primarySubnetId: metadata.subnetId, clusterName };
  const out = new Map<string, string>();
  for (const s of subnets) {
    const why = drainReason(s, ctx);
    if (why !== undefined) out.set(s.subnetId, why);
  }
  return out;
}

export function discoveredSubnetPlacer(
  cloud: Cloud,
  metadata: InstanceMetadata,
  clusterName?: string,
  capacity?: PlacementCapacity,
): EniPlacer {
  const describe = async (): Promise<SubnetInfo[]> => {
    try {
      return await cloud.describeSubnets({
        availabilityZone: metadata.availabilityZone,
        vpcId: metadata.vpcId,
      });
    } catch (err) {
      throw new Error(
        `subnet discovery: cannot describe the subnets of ${metadata.vpcId} in ${metadata.availabilityZone}: ${cloudErrorText(err)}`,
        { cause: err },
      );
    }
  };
  return {
    primaryEniCarriesPods: true,
    async next(options: PlacementOptions = {}) {
      const freePrefixesOf = capacity?.byPrefixes === true ? censusFreePrefixes(capacity.census) : undefined;
      const described = await describe();
      // Every subnet that could take an ENI is worth a census, not only the one chosen now.
      for (const s of described) capacity?.census.want(s.subnetId, s.cidr);
      const ranked = rankDiscoveredSubnets(described, metadata, {
        clusterName,
        ...(options.avoidSubnets === undefined ? {} : { avoid: options.avoidSubnets }),
        ...(freePrefixesOf === undefined ? {} : { freePrefixesOf }),
      });
      const placements = ranked.map((s): EniPlacement => {
        const free28 = freePrefixesOf?.(s.subnetId);
        return {
          subnetId: s.subnetId,
          subnetCidr: s.cidr,
          securityGroupIds: metadata.securityGroupIds,
          reason: `subnet discovery (${free28 === undefined ? '' : `${free28} free /28s by census, `}${s.availableIpCount} free addresses)`,
        };
      });
      const [best, ...rest] = placements;
      if (best === undefined) throw new EniPlacementError('subnet discovery: no candidate subnet');
      return rest.length === 0 ? best : { ...best, fallbacks: rest };
    },
    drainingSubnets: async () => drainingOf(await describe(), metadata, clusterName),
  };
}

/** Placement by the cluster's subnet census: ranked by free /28s when the pool delegates prefixes. */
export interface PlacementCapacity {
  readonly census: SubnetCensusSource;
  /** Prefix delegation on: the ENI is for /28s, so free /28s decide, not free addresses. */
  readonly byPrefixes: boolean;
}

function censusFreePrefixes(
  census: SubnetCensusSource,
): ((subnetId: string) => number | undefined) | undefined {
  if (!census.places) return undefined;
  return (subnetId) => census.view(subnetId)?.figures().freePrefixes;
}

/**
 * ENABLE_SUBNET_DISCOVERY=false: the primary ENI's subnet, but, as upstream, no new ENI there while
 * it is tagged `kubernetes.io/role/cni=0` (one DescribeSubnets of it per new ENI). When the tags
 * cannot be read the ENI goes there all the same, as upstream proceeds.
 */
export function primarySubnetPlacerUnlessExcluded(cloud: Cloud, metadata: InstanceMetadata): EniPlacer {
  const primary = primarySubnetPlacer(metadata);
  return {
    primaryEniCarriesPods: true,
    async next() {
      const placement = await primary.next();
      let subnet: SubnetInfo | undefined;
      try {
        [subnet] = await cloud.describeSubnets({ subnetIds: [metadata.subnetId] });
      } catch (err) {
        return { ...placement, reason: `${placement.reason} (its tags unread: ${cloudErrorText(err)})` };
      }
      if (subnet?.tags[SUBNET_DISCOVERY_TAG] === SUBNET_EXCLUDED_VALUE) {
        throw new EniPlacementError(
          `the primary ENI's subnet ${metadata.subnetId} is tagged ${SUBNET_DISCOVERY_TAG}=0 and ENABLE_SUBNET_DISCOVERY=false: no subnet may take a new ENI; remove the tag or enable subnet discovery`,
        );
      }
      return placement;
    },
  };
}
