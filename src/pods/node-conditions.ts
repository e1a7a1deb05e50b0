// Conditions on the agent's own Node, written as the kubelet and node-problem-detector write
// theirs: a strategic merge patch of the `nodes/{name}/status` subresource that names one
// condition by its type, so the API server merges it into the list and keeps every other
// condition (Ready, MemoryPressure, another component's). The RBAC it needs is `patch` on
// `nodes/status`.
import type { KubeApiConfig } from './kube-api-config.ts';
import { KubeClient } from './kube-client.ts';

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

export interface NodeCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  /** UpperCamelCase, `:` allowed (metav1.Condition's pattern): `PoolEmpty:MaxEnis`. */
  readonly reason: string;
  readonly message: string;
  /** When the status last changed (ms since epoch); the writer keeps it across heartbeats. */
  readonly lastTransitionTime: number;
  /** When this was last written (ms since epoch). */
  readonly lastHeartbeatTime: number;
}

export interface NodeConditions {
  set(condition: NodeCondition): Promise<void>;
}

/** Whole seconds, as the API server stores metav1.Time. */
function time(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export function conditionPatch(c: NodeCondition): Record<string, unknown> {
  return {
    status: {
      conditions: [
        {
          type: c.type,
          status: c.status,
          reason: c.reason,
          message: c.message,
          lastTransitionTime: time(c.lastTransitionTime),
          lastHeartbeatTime: time(c.lastHeartbeatTime),
        },
      ],
    },
  };
}

export function kubeNodeConditions(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): NodeConditions {
  const client = new KubeClient(api, { timeoutMs });
  const path = `/api/v1/nodes/${encodeURIComponent(nodeName)}/status`;
  return {
    async set(condition) {
      await client.request('PATCH', path, conditionPatch(condition), STRATEGIC_MERGE_PATCH);
    },
  };
}

/** The node's kubelet `maxPods` as it reports it (`status.capacity.pods`); undefined when absent. */
export function reportedMaxPods(node: unknown): number | undefined {
  const pods = (node as { status?: { capacity?: { pods?: unknown } } } | undefined)?.status?.capacity?.pods;
  const n = typeof pods === 'string' ? Number(pods) : typeof pods === 'number' ? pods : Number.NaN;
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** GET of the node, for what the agent reads of it once (its maxPods). */
export function nodeReader(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): () => Promise<unknown> {
  const client = new KubeClient(api, { timeoutMs });
  return () => client.getNode(nodeName);
}
