// Pods of the Kubernetes slice: objects keyed by namespace/name, one resourceVersion counter for
// all changes, and a bounded event log so a watch can resume from a resourceVersion.
import type { IdSource } from '../vpc/ids.ts';
import { isJsonObject, type JsonObject, mergePatch } from './objects.ts';

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

const EVENT_LOG_SIZE = 10_000;

function meta(obj: JsonObject): JsonObject {
  const m = obj.metadata;
  return isJsonObject(m) ? m : {};
}

export class PodStore {
  readonly #ids: IdSource;
  readonly #now: () => Date;
  readonly #pods = new Map<string, JsonObject>();
  readonly #log: WatchEvent[] = [];
  readonly #listeners = new Set<(e: WatchEvent) => void>();
  #version = 1;

  constructor(ids: IdSource, now: () => Date = () => new Date()) {
    this.#ids = ids;
    this.#now = now;
  }

  get resourceVersion(): number {
    return this.#version;
  }

  list(): JsonObject[] {
    return [...this.#pods.values()];
  }

  get(namespace: string, name: string): JsonObject {
    const pod = this.#pods.get(`${namespace}/${name}`);
    if (pod === undefined) throw new KubeError(404, 'NotFound', `pods "${name}" not found`);
    return pod;
  }

  create(namespace: string, body: unknown): JsonObject {
    if (!isJsonObject(body)) throw new KubeError(400, 'BadRequest', 'body must be a Pod object');
    const m = meta(body);
    const name = m.name;
    if (typeof name !== 'string' || name === '')
      throw new KubeError(422, 'Invalid', 'metadata.name is required');
    if (m.namespace !== undefined && m.namespace !== namespace) {
      throw new KubeError(400, 'BadRequest', 'the namespace of the object does not match the request');
    }
    if (this.#pods.has(`${namespace}/${name}`)) {
      throw new KubeError(409, 'AlreadyExists', `pods "${name}" already exists`);
    }
    const uid = typeof m.uid === 'string' && m.uid !== '' ? m.uid : this.#uid();
    const pod: JsonObject = {
      ...body,
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...m,
        name,
        namespace,
        uid,
        creationTimestamp: this.#now()
          .toISOString()
          .replace(/\.\d+Z$/, 'Z'),
        resourceVersion: '',
      },
      spec: isJsonObject(body.spec) ? body.spec : {},
    };
    return this.#commit('ADDED', `${namespace}/${name}`, pod);
  }

  patch(namespace: string, name: string, patch: unknown): JsonObject {
    const current = this.get(namespace, name);
    if (!isJsonObject(patch)) throw new KubeError(400, 'BadRequest', 'patch must be a JSON object');
    const merged = mergePatch(current, patch);
    if (!isJsonObject(merged)) throw new KubeError(400, 'BadRequest', 'patch must keep an object');
    // Identity is not patchable.
    const m = meta(current);
    merged.metadata = { ...meta(merged), name, namespace, uid: m.uid ?? null };
    return this.#commit('MODIFIED', `${namespace}/${name}`, merged);
  }

  delete(namespace: string, name: string): JsonObject {
    const pod = this.get(namespace, name);
    this.#pods.delete(`${namespace}/${name}`);
    return this.#commit('DELETED', `${namespace}/${name}`, pod);
  }

  /** Events after `resourceVersion`, or undefined when the log no longer reaches back that far. */
  eventsSince(resourceVersion: number): WatchEvent[] | undefined {
    const oldest = this.#log[0];
    if (
      oldest !== undefined &&
      oldest.resourceVersion > resourceVersion + 1 &&
      this.#log.length >= EVENT_LOG_SIZE
    ) {
      return undefined;
    }
    return this.#log.filter((e) => e.resourceVersion > resourceVersion);
  }

  subscribe(listener: (e: WatchEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #commit(type: WatchEventType, key: string, pod: JsonObject): JsonObject {
    this.#version += 1;
    const stored: JsonObject = { ...pod, metadata: { ...meta(pod), resourceVersion: String(this.#version) } };
    if (type !== 'DELETED') this.#pods.set(key, stored);
    const event: WatchEvent = { type, object: stored, resourceVersion: this.#version };
    this.#log.push(event);
    if (this.#log.length > EVENT_LOG_SIZE) this.#log.shift();
    for (const l of this.#listeners) l(event);
    return stored;
  }

  #uid(): string {
    const h = this.#ids.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
  }
}
