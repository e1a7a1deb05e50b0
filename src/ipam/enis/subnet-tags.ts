// What a subnet's tags say to subnet discovery (ENABLE_SUBNET_DISCOVERY), with upstream's meanings
// (amazon-vpc-cni-k8s 1.22.1 and later, pkg/awsutils): `kubernetes.io/role/cni` with the value
// "0" excludes a subnet, the primary ENI's too, and any other value includes one; the primary
// ENI's subnet needs no tag, any other subnet needs it. A subnet that carries cluster tags
// (`cni.networking.k8s.aws/cluster/<name>`, any value) serves only the clusters named, when the
// agent has a CLUSTER_NAME; an untagged primary subnet serves whatever its cluster tags say.
// Excluded means two things: no new ENI goes there, and the ENIs already there drain (they lend
// no new address and are freed once no pod uses one). Pure: the placers and the pool ask.
import type { SubnetInfo } from '../../cloud/cloud.ts';

export const SUBNET_DISCOVERY_TAG = 'kubernetes.io/role/cni';
/** Upstream's value that excludes a subnet; every other value includes it. */
export const SUBNET_EXCLUDED_VALUE = '0';
/** Followed by a cluster name: the subnet serves that cluster (upstream since 1.22.1). */
export const CLUSTER_SUBNET_TAG_PREFIX = 'cni.networking.k8s.aws/cluster/';

export interface SubnetTagContext {
  /** The primary ENI's subnet. */
  readonly primarySubnetId: string;
  /** CLUSTER_NAME; without it cluster tags are not looked at (as upstream). */
  readonly clusterName?: string | undefined;
}

/** Whether a new ENI may go into `subnet`, and why not when it may not. */
export type SubnetVerdict = { readonly usable: true } | { readonly usable: false; readonly why: string };

export function verdictForNewEnis(subnet: SubnetInfo, ctx: SubnetTagContext): SubnetVerdict {
  const role = subnet.tags[SUBNET_DISCOVERY_TAG];
  if (role === SUBNET_EXCLUDED_VALUE) return { usable: false, why: `tagged ${SUBNET_DISCOVERY_TAG}=0` };
  if (role === undefined) {
    return subnet.subnetId === ctx.primarySubnetId
      ? { usable: true }
      : { usable: false, why: `not tagged ${SUBNET_DISCOVERY_TAG}` };
  }
  const other = otherClusters(subnet, ctx);
  return other === undefined ? { usable: true } : { usable: false, why: other };
}

/**
 * Why the ENIs already in `subnet` must drain, or undefined when they may go on lending: the
 * subnet is tagged 0, or tagged for discovery but kept to other clusters. An untagged subnet keeps
 * its ENIs (upstream's IsSubnetExcluded): an ENI made before the tag went, or by custom networking.
 */
export function drainReason(subnet: SubnetInfo, ctx: SubnetTagContext): string | undefined {
  const role = subnet.tags[SUBNET_DISCOVERY_TAG];
  if (role === undefined) return undefined;
  if (role === SUBNET_EXCLUDED_VALUE) return `tagged ${SUBNET_DISCOVERY_TAG}=0`;
  return otherClusters(subnet, ctx);
}

/** Why the subnet is another cluster's, or undefined when it is (also) this one's. */
function otherClusters(subnet: SubnetInfo, ctx: SubnetTagContext): string | undefined {
  if (ctx.clusterName === undefined || ctx.clusterName === '') return undefined;
  const clusters = Object.keys(subnet.tags)
    .filter((k) => k.startsWith(CLUSTER_SUBNET_TAG_PREFIX))
    .map((k) => k.slice(CLUSTER_SUBNET_TAG_PREFIX.length));
  if (clusters.length === 0 || clusters.includes(ctx.clusterName)) return undefined;
  return `kept to cluster ${clusters.join(', ')} by ${CLUSTER_SUBNET_TAG_PREFIX}…, not CLUSTER_NAME ${ctx.clusterName}`;
}
