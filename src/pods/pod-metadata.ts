// A pod as the agent needs it (identity, node, annotations, whether it asked for a branch ENI),
// parsed once at the edge from what the Kubernetes API sent.
import { POD_ENI_RESOURCE } from './pod-eni.ts';

export interface PodMetadata {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly nodeName: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  /** Its first container requests the pod-eni resource: it must get a branch ENI, never the node's SGs. */
  readonly requestsPodEni: boolean;
  /** status.podIP, once the kubelet reported it (a host-network pod's is the node's own). */
  readonly podIp?: string;
}

export class PodLookupError extends Error {
  override name = 'PodLookupError';
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(obj(v) ?? {})) if (typeof val === 'string') out[k] = val;
  return out;
}

/** As the upstream checks it: the first container's limits or requests name the resource. */
function requestsPodEni(spec: Obj | undefined): boolean {
  const containers = spec?.containers;
  const first = Array.isArray(containers) ? obj(containers[0]) : undefined;
  const resources = obj(first?.resources);
  return [resources?.limits, resources?.requests].some((r) => obj(r)?.[POD_ENI_RESOURCE] !== undefined);
}

/** Parses a core/v1 Pod. */
export function parsePod(body: unknown): PodMetadata {
  const pod = obj(body);
  if (!pod) throw new PodLookupError('pod is not an object');
  const metadata = obj(pod.metadata);
  const spec = obj(pod.spec);
  const { name, namespace, uid } = metadata ?? {};
  if (typeof name !== 'string' || typeof namespace !== 'string' || typeof uid !== 'string') {
    throw new PodLookupError('pod lacks metadata.name, metadata.namespace or metadata.uid');
  }
  const nodeName = spec?.nodeName;
  const podIp = obj(pod.status)?.podIP;
  return {
    ...(typeof podIp === 'string' && podIp !== '' && spec?.hostNetwork !== true ? { podIp } : {}),
    name,
    namespace,
    uid,
    nodeName: typeof nodeName === 'string' ? nodeName : undefined,
    annotations: stringRecord(metadata?.annotations),
    requestsPodEni: requestsPodEni(spec),
  };
}
