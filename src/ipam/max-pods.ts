// Max pods per node as upstream computes it (its max-pods calculator and eni-max-pods table):
// secondary-IP mode: ENIs × (addresses per ENI − 1) + 2; prefix mode: ENIs × (addresses per ENI
// − 1) × 16 + 2, capped at 110 for instance types with fewer than 30 vCPUs and 250 otherwise
// (Kubernetes' recommendations). The + 2 counts the host-network pods (aws-node, kube-proxy).
import type { InstanceTypeLimits } from '../cloud/cloud.ts';
import { PREFIX_SIZE } from './prefixes.ts';

export function maxPods(
  limits: InstanceTypeLimits,
  options: { readonly prefixDelegation: boolean; readonly vcpus?: number },
): number {
  const slots = limits.maxEnis * Math.max(limits.ipsPerEni - 1, 0);
  if (!options.prefixDelegation) return slots + 2;
  const cap = options.vcpus !== undefined && options.vcpus >= 30 ? 250 : 110;
  return Math.min(slots * PREFIX_SIZE + 2, cap);
}
