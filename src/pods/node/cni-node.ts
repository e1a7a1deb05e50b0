// The node's CNINode (vpcresources.k8s.aws/v1alpha1, cluster-scoped, named like the node): where a
// node's CNI lists the features it wants of the VPC resource controller (`spec.features`:
// `SecurityGroupsForPods`, `CustomNetworking` with the ENIConfig's name). The controller creates
// one per node and adds its own fields (a finalizer, `spec.tags`); the CNI only writes features.
// Read and written through the agent's own client; parsed here, at the edge.
//
// A feature list is written with a merge patch that carries the resourceVersion it was read at:
// the API server refuses it (409 Conflict) when the object changed meanwhile, so a feature another
// writer added in between is never dropped by writing back a stale list.
import { errorText } from '../../infra/error-text.ts';
import type { KubeApiConfig } from '../kube-api-config.ts';
import { apiStatus, KubeClient, MERGE_PATCH } from '../kube-client.ts';

export const CNI_NODE_API = '/apis/vpcresources.k8s.aws/v1alpha1/cninodes';
export const CNI_NODE_API_VERSION = 'vpcresources.k8s.aws/v1alpha1';
/** The node asks for a trunk ENI and branch ENIs (ENABLE_POD_ENI). */
export const SECURITY_GROUPS_FOR_PODS = 'SecurityGroupsForPods';
/** The node uses custom networking; the value names its ENIConfig. */
export const CUSTOM_NETWORKING = 'CustomNetworking';

/** One of `spec.features`; a feature without a value has none (upstream omits it). */
export interface CniNodeFeature {
  readonly name: string;
  readonly value?: string;
}

/** What the agent reads of its CNINode. */
export interface CniNodeState {
  readonly resourceVersion: string;
  readonly features: readonly CniNodeFeature[];
  /** Marked for deletion (a finalizer holds it): it goes, and a write now would be lost with it. */
  readonly deleting: boolean;
}

/** The agent's own CNINode in the API. */
export interface CniNodes {
  /** Undefined when there is none (or the API has no such kind: creating one then says so). */
  read(): Promise<CniNodeState | undefined>;
  /** Creates it owned by the node (so it goes with the node); rejects with status 409 when one exists. */
  create(features: readonly CniNodeFeature[]): Promise<CniNodeState>;
  /** Replaces `spec.features` if the object is still at `resourceVersion`; else rejects with status 409. */
  setFeatures(resourceVersion: string, features: readonly CniNodeFeature[]): Promise<CniNodeState>;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** A CNINode as the API answers it; what is not one fails, naming the field. */
export function parseCniNode(body: unknown, nodeName: string): CniNodeState {
  const what = `CNINode ${nodeName}`;
  const meta = obj(obj(body)?.metadata);
  const resourceVersion = meta?.resourceVersion;
  if (typeof resourceVersion !== 'string' || resourceVersion === '') {
    throw new Error(`${what}: the API's answer has no metadata.resourceVersion`);
  }
  const listed = obj(obj(body)?.spec)?.features ?? [];
  if (!Array.isArray(listed)) throw new Error(`${what}: spec.features is not a list`);
  const features = listed.map((f: unknown, i): CniNodeFeature => {
    const name = obj(f)?.name;
    const value = obj(f)?.value;
    if (typeof name !== 'string' || name === '') throw new Error(`${what}: spec.features[${i}] has no name`);
    if (value !== undefined && typeof value !== 'string') {
      throw new Error(`${what}: spec.features[${i}].value is not a string`);
    }
    return value === undefined || value === '' ? { name } : { name, value };
  });
  const deletion = meta?.deletionTimestamp;
  return { resourceVersion, features, deleting: typeof deletion === 'string' && deletion !== '' };
}

/** The features as the CRD spells them: a value only where there is one. */
function featuresBody(features: readonly CniNodeFeature[]): Obj[] {
  return features.map((f) => (f.value === undefined ? { name: f.name } : { name: f.name, value: f.value }));
}

export class KubeCniNodes implements CniNodes {
  readonly #client: Pick<KubeClient, 'request' | 'getNode'>;
  readonly #nodeName: string;
  readonly #path: string;

  constructor(client: Pick<KubeClient, 'request' | 'getNode'>, nodeName: string) {
    this.#client = client;
    this.#nodeName = nodeName;
    this.#path = `${CNI_NODE_API}/${encodeURIComponent(nodeName)}`;
  }

  async read(): Promise<CniNodeState | undefined> {
    let body: unknown;
    try {
      body = await this.#client.request('GET', this.#path);
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
    return parseCniNode(body, this.#nodeName);
  }

  async create(features: readonly CniNodeFeature[]): Promise<CniNodeState> {
    // The controller's shape: owned by the Node (the garbage collector removes it with the node),
    // with the node's OS label. The controller adds its finalizer and tags to it as to its own.
    const node = obj(await this.#client.getNode(this.#nodeName));
    const meta = obj(node?.metadata);
    const uid = meta?.uid;
    if (typeof uid !== 'string' || uid === '') {
      throw new Error(`node ${this.#nodeName} has no metadata.uid to own its CNINode`);
    }
    const os = obj(meta?.labels)?.['kubernetes.io/os'];
    const body = {
      apiVersion: CNI_NODE_API_VERSION,
      kind: 'CNINode',
      metadata: {
        name: this.#nodeName,
        ...(typeof os === 'string' ? { labels: { 'kubernetes.io/os': os } } : {}),
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.#nodeName, uid, controller: true }],
      },
      spec: { features: featuresBody(features) },
    };
    let created: unknown;
    try {
      created = await this.#client.request('POST', CNI_NODE_API, body);
    } catch (err) {
      // 404 on a create: the API server does not know the kind at all.
      if (apiStatus(err) !== 404) throw err;
      throw new Error(
        `cannot create CNINode ${this.#nodeName}: the API has no cninodes.vpcresources.k8s.aws (its CRD comes with the VPC resource controller): ${errorText(err)}`,
        { cause: err },
      );
    }
    return parseCniNode(created, this.#nodeName);
  }

  async setFeatures(resourceVersion: string, features: readonly CniNodeFeature[]): Promise<CniNodeState> {
    const patch = { metadata: { resourceVersion }, spec: { features: featuresBody(features) } };
    return parseCniNode(await this.#client.request('PATCH', this.#path, patch, MERGE_PATCH), this.#nodeName);
  }
}

/** The agent's CNINode through its own client of the API. */
export function kubeCniNodes(api: KubeApiConfig, nodeName: string): KubeCniNodes {
  return new KubeCniNodes(new KubeClient(api, { timeoutMs: 5000 }), nodeName);
}
