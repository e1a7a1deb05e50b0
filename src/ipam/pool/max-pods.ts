// Max pods per node as upstream computes it (its max-pods calculator and eni-max-pods table):
// secondary-IP mode: ENIs × (addresses per ENI − 1) + 2; prefix mode: ENIs × (addresses per ENI
// − 1) × 16 + 2, capped at 110 for instance types with 30 vCPUs or fewer and 250 above
// (Kubernetes' recommendations). The + 2 counts the host-network pods (aws-node, kube-proxy).
// With custom networking the primary ENI carries no pods, so one ENI fewer counts (upstream's
// --cni-custom-networking-enabled), in either mode.
import type { InstanceTypeLimits } from '../../cloud/cloud.ts';
import { PREFIX_SIZE } from '../prefixes/prefixes.ts';

export interface MaxPodsOptions {
  readonly prefixDelegation: boolean;
  /** AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: pods only on secondary ENIs. */
  readonly customNetworking?: boolean;
  /** The instance type's vCPUs; unknown counts as few (the 110 cap). */
  readonly vcpus?: number;
}

export function maxPods(limits: InstanceTypeLimits, options: MaxPodsOptions): number {
  const enisForPods = Math.max(limits.maxEnis - (options.customNetworking === true ? 1 : 0), 0);
  const slots = enisForPods * Math.max(limits.ipsPerEni - 1, 0);
  if (!options.prefixDelegation) return slots + 2;
  const cap = options.vcpus !== undefined && options.vcpus > 30 ? 250 : 110;
  return Math.min(slots * PREFIX_SIZE + 2, cap);
}

/**
 * The pods the node can give an address in its mode, uncapped (what kubelet's maxPods must not
 * exceed): the ENIs' slots (× 16 in prefix mode) plus the two host-network pods upstream counts.
 */
export function addressablePods(limits: InstanceTypeLimits, options: Omit<MaxPodsOptions, 'vcpus'>): number {
  const enisForPods = Math.max(limits.maxEnis - (options.customNetworking === true ? 1 : 0), 0);
  const slots = enisForPods * Math.max(limits.ipsPerEni - 1, 0);
  return slots * (options.prefixDelegation ? PREFIX_SIZE : 1) + 2;
}
