// Whether the agent's own node is unschedulable, as upstream tells it for
// AWS_MANAGE_ENIS_NON_SCHEDULABLE: the node carries the taint node.kubernetes.io/unschedulable with
// effect NoSchedule, which the node lifecycle controller puts on a cordoned node. Read from the API
// each time it is asked (only when the pool is about to add or free something).
import type { KubeApiConfig } from '../kube-api-config.ts';
import { KubeClient } from '../kube-client.ts';
import { taintsOf } from './node-taints.ts';

export const UNSCHEDULABLE_TAINT = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' } as const;

export interface NodeSchedulability {
  unschedulable(): Promise<boolean>;
}

/** Whether a node object (as the API returns it) carries the unschedulable taint. */
export function carriesUnschedulableTaint(node: unknown, nodeName: string): boolean {
  return taintsOf(node, nodeName).some(
    (t) => t.key === UNSCHEDULABLE_TAINT.key && t.effect === UNSCHEDULABLE_TAINT.effect,
  );
}

export function kubeNodeSchedulability(
  api: KubeApiConfig,
  nodeName: string,
  timeoutMs = 5000,
): NodeSchedulability {
  const client = new KubeClient(api, { timeoutMs });
  return {
    async unschedulable() {
      return carriesUnschedulableTaint(await client.getNode(nodeName), nodeName);
    },
  };
}
