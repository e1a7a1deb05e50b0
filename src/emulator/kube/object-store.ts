// Objects of one kind in the Kubernetes slice (pods, nodes): keyed by namespace/name (name alone
// for cluster-scoped kinds), resourceVersions from one counter shared by all kinds (as etcd's
// revision is), and a bounded event log so a watch can resume from a resourceVersion.
import type { IdSource } from '../vpc/ids.ts';
import { isJsonObject, type Json, type JsonObject, mergePatch } from './objects.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent {
  readonly type: WatchEventType;
  readonly object: JsonObject;
  readonly resourceVersion: number;
}

export class KubeError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

export interface ResourceKind {
  readonly kind: string; // Pod
  readonly listKind: string; // PodList
  readonly resource: string; // pods
  readonly namespaced: boolean;
  /** Group/version of a kind outside the core group (default core `v1`). */
  readonly apiVersion?: string;
  /**
   * A custom resource (a CRD's): an update must name the resourceVersion it read, as the API server
   * asks of custom resources; built-in kinds may be updated unconditionally.
   */
  readonly customResource?: boolean;
}

export const POD: ResourceKind = { kind: 'Pod', listKind: 'PodList', resource: 'pods', namespaced: true };
export const NODE: ResourceKind = {
  kind: 'Node',
  listKind: 'NodeList',
  resource: 'nodes',
  namespaced: false,
};

/** Custom networking's ENIConfig (cluster-scoped, as upstream's CRD): spec.subnet, spec.securityGroups. */
export const ENI_CONFIG: ResourceKind = {
  kind: 'ENIConfig',
  listKind: 'ENIConfigList',
  resource: 'eniconfigs',
  namespaced: false,
  apiVersion: 'crd.k8s.amazonaws.com/v1alpha1',
  customResource: true,
};

/**
 * The node's CNINode (vpcresources.k8s.aws/v1alpha1, cluster-scoped, named like the node): the
 * features (`spec.features`) the node's CNI asks of the VPC resource controller.
 */
export const CNI_NODE: ResourceKind = {
  kind: 'CNINode',
  listKind: 'CNINodeList',
  resource: 'cninodes',
  namespaced: false,
  apiVersion: 'vpcresources.k8s.aws/v1alpha1',
  customResource: true,
};

/**
 * coordination.k8s.io/v1 Lease (namespaced): `spec.holderIdentity`, `leaseDurationSeconds`,
 * `acquireTime`, `renewTime`, `leaseTransitions`, what leader election writes.
 */
export const LEASE: ResourceKind = {
  kind: 'Lease',
  listKind: 'LeaseList',
  resource: 'leases',
  namespaced: true,
  apiVersion: 'coordination.k8s.io/v1',
};

/**
 * apps/v1 DaemonSet (namespaced): read by the agents for `status.desiredNumberScheduled`, how many
 * nodes run the agent (the EC2 throttle Lease divides EC2's buckets by it); no controller here
 * keeps the status: whoever creates one writes it.
 */
export const DAEMON_SET: ResourceKind = {
  kind: 'DaemonSet',
  listKind: 'DaemonSetList',
  resource: 'daemonsets',
  namespaced: true,
  apiVersion: 'apps/v1',
};

/** Core v1 ConfigMaps (a preflight check reads kube-proxy's configuration from one). */
export const CONFIG_MAP: ResourceKind = {
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  resource: 'configmaps',
  namespaced: true,
};

export const EVENT: ResourceKind = {
  kind: 'Event',
  listKind: 'EventList',
  resource: 'events',
  namespaced: true,
};

/**
 * The kind's resource as the API server names it in its messages: `pods`, or for a kind of an API
 * group `cninodes.vpcresources.k8s.aws`.
 */
export function qualifiedResource(kind: ResourceKind): string {
  const group = apiGroup(kind);
  return group === undefined ? kind.resource : `${kind.resource}.${group}`;
}

/** The kind's API group (`vpcresources.k8s.aws`); undefined for the core group. */
function apiGroup(kind: ResourceKind): string | undefined {
  const slash = kind.apiVersion?.indexOf('/') ?? -1;
  return slash < 0 ? undefined : kind.apiVersion?.slice(0, slash);
}

/** The cluster's resourceVersion: one counter for every kind. */
export class ResourceVersionCounter {
  #current = 1;

  get current(): number {
    return this.#current;
  }

  next(): number {
    this.#current += 1;
    return this.#current;
  }
}

export interface ObjectStoreDeps {
  readonly ids: IdSource;
  readonly versions: ResourceVersionCounter;
  readonly now?: () => Date;
  /** Events kept for resuming watches; an older resourceVersion is answered 410 Expired. */
  readonly eventLogSize?: number;
}

const DEFAULT_EVENT_LOG_SIZE = 10_000;

function meta(obj: JsonObject): JsonObject {
  const m = obj.metadata;
  return isJsonObject(m) ? m : {};
}

function finalizersOf(obj: JsonObject): Json[] {
  const f = meta(obj).finalizers;
  return Array.isArray(f) ? f : [];
}

export class ObjectStore {
  readonly kind: ResourceKind;
  readonly #deps: ObjectStoreDeps;
  readonly #objects = new Map<string, JsonObject>();
  readonly #log: WatchEvent[] = [];
  readonly #listeners = new Set<(e: WatchEvent) => void>();
  /** resourceVersion of the newest event dropped from the log (0: none dropped yet). */
  #compactedThrough = 0;

  constructor(kind: ResourceKind, deps: ObjectStoreDeps) {
    this.kind = kind;
    this.#deps = deps;
  }

  /** The cluster's current resourceVersion (what a list answers with). */
  get resourceVersion(): number {
    return this.#deps.versions.current;
  }

  list(): JsonObject[] {
    return [...this.#objects.values()];
  }

  /** `namespace` is ignored for cluster-scoped kinds. */
  get(namespace: string | undefined, name: string): JsonObject {
    const found = this.#objects.get(this.#key(namespace, name));
    if (found === undefined) {
      throw new KubeError(404, 'NotFound', `${qualifiedResource(this.kind)} "${name}" not found`);
    }
    return found;
  }

  find(namespace: string | undefined, name: string): JsonObject | undefined {
    return this.#objects.get(this.#key(namespace, name));
  }

  create(namespace: string | undefined, body: unknown): JsonObject {
    if (!isJsonObject(body))
      throw new KubeError(400, 'BadRequest', `body must be a ${this.kind.kind} object`);
    const m = meta(body);
    const name = m.name;
    if (typeof name !== 'string' || name === '')
      throw new KubeError(422, 'Invalid', 'metadata.name is required');
    if (this.kind.namespaced && m.namespace !== undefined && m.namespace !== namespace) {
      throw new KubeError(400, 'BadRequest', 'the namespace of the object does not match the request');
    }
    const key = this.#key(namespace, name);
    if (this.#objects.has(key)) {
      throw new KubeError(409, 'AlreadyExists', `${qualifiedResource(this.kind)} "${name}" already exists`);
    }
    const uid = typeof m.uid === 'string' && m.uid !== '' ? m.uid : this.#uid();
    const object: JsonObject = {
      ...body,
      apiVersion: this.kind.apiVersion ?? 'v1',
      kind: this.kind.kind,
      metadata: {
        ...m,
        name,
        ...(this.kind.namespaced && namespace !== undefined ? { namespace } : {}),
        uid,
        creationTimestamp: this.#timestamp(),
        resourceVersion: '',
      },
      spec: isJsonObject(body.spec) ? body.spec : {},
    };
    return this.#commit('ADDED', key, object);
  }

  /**
   * A merge patch (RFC 7386); identity (name, namespace, uid, creationTimestamp) is not patchable.
   * A `metadata.resourceVersion` in the patch is a precondition (replace).
   */
  patch(namespace: string | undefined, name: string, patch: unknown): JsonObject {
    const current = this.get(namespace, name);
    if (!isJsonObject(patch)) throw new KubeError(400, 'BadRequest', 'patch must be a JSON object');
    return this.replace(namespace, name, mergePatch(current, patch));
  }

  /**
   * An update (PUT): `body` replaces the object. As the API server does for custom resources, it
   * must name the resourceVersion it was read at; core kinds may be updated unconditionally.
   */
  update(namespace: string | undefined, name: string, body: unknown): JsonObject {
    if (!isJsonObject(body))
      throw new KubeError(400, 'BadRequest', `body must be a ${this.kind.kind} object`);
    const m = meta(body);
    if (m.name !== name) {
      throw new KubeError(
        400,
        'BadRequest',
        `the name of the object (${String(m.name)}) does not match the name on the URL (${name})`,
      );
    }
    const rv = m.resourceVersion;
    const group = apiGroup(this.kind);
    if (this.kind.customResource === true && (typeof rv !== 'string' || rv === '')) {
      throw new KubeError(
        422,
        'Invalid',
        `${this.kind.kind}.${group} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
      );
    }
    return this.replace(namespace, name, body);
  }

  /**
   * Stores `next` as the new state of an existing object, keeping its identity. A resourceVersion
   * in `next` (a PUT's, or one a patch carries) is a precondition, as the API server makes it: an
   * object changed since that version is not overwritten (409 Conflict), so a client that read,
   * changed and wrote back loses nobody else's change.
   */
  replace(namespace: string | undefined, name: string, next: unknown): JsonObject {
    const current = this.get(namespace, name);
    if (!isJsonObject(next)) throw new KubeError(400, 'BadRequest', 'patch must keep an object');
    const m = meta(current);
    const expected = meta(next).resourceVersion;
    if (typeof expected === 'string' && expected !== '' && expected !== m.resourceVersion) {
      throw new KubeError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${qualifiedResource(this.kind)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const identity: JsonObject = { name, uid: m.uid ?? null, creationTimestamp: m.creationTimestamp ?? null };
    if (m.namespace !== undefined) identity.namespace = m.namespace;
    if (m.deletionTimestamp !== undefined) identity.deletionTimestamp = m.deletionTimestamp;
    const merged: JsonObject = {
      ...next,
      apiVersion: this.kind.apiVersion ?? 'v1',
      kind: this.kind.kind,
      metadata: { ...meta(next), ...identity },
    };
    const key = this.#key(namespace, name);
    const stored = this.#commit('MODIFIED', key, merged);
    // The write that takes the last finalizer off an object being deleted completes its deletion.
    if (identity.deletionTimestamp !== undefined && finalizersOf(merged).length === 0) {
      this.#objects.delete(key);
      this.#commit('DELETED', key, stored);
    }
    return stored;
  }

  /**
   * An object with finalizers is only marked (metadata.deletionTimestamp, a MODIFIED event): it
   * goes once a write has taken its last finalizer off, as the API server keeps it until then.
   */
  delete(namespace: string | undefined, name: string): JsonObject {
    const found = this.get(namespace, name);
    const key = this.#key(namespace, name);
    const m = meta(found);
    if (finalizersOf(found).length > 0) {
      if (m.deletionTimestamp !== undefined) return found;
      const marked = { ...m, deletionTimestamp: this.#timestamp(), deletionGracePeriodSeconds: 0 };
      return this.#commit('MODIFIED', key, { ...found, metadata: marked });
    }
    this.#objects.delete(key);
    return this.#commit('DELETED', key, found);
  }

  /** Events after `resourceVersion`, or undefined when the log no longer reaches back that far. */
  eventsSince(resourceVersion: number): WatchEvent[] | undefined {
    if (resourceVersion < this.#compactedThrough) return undefined;
    return this.#log.filter((e) => e.resourceVersion > resourceVersion);
  }

  subscribe(listener: (e: WatchEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #key(namespace: string | undefined, name: string): string {
    return this.kind.namespaced ? `${namespace ?? ''}/${name}` : name;
  }

  #commit(type: WatchEventType, key: string, object: JsonObject): JsonObject {
    const version = this.#deps.versions.next();
    const stored: JsonObject = { ...object, metadata: { ...meta(object), resourceVersion: String(version) } };
    if (type !== 'DELETED') this.#objects.set(key, stored);
    const event: WatchEvent = { type, object: stored, resourceVersion: version };
    this.#log.push(event);
    if (this.#log.length > (this.#deps.eventLogSize ?? DEFAULT_EVENT_LOG_SIZE)) {
      this.#compactedThrough = this.#log.shift()?.resourceVersion ?? this.#compactedThrough;
    }
    for (const l of this.#listeners) l(event);
    return stored;
  }

  /** Now, as the API server writes times: RFC 3339 in whole seconds. */
  #timestamp(): string {
    return (this.#deps.now?.() ?? new Date()).toISOString().replace(/\.\d+Z$/, 'Z');
  }

  #uid(): string {
    const h = this.#deps.ids.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
  }
}
