// The agent's own Kubernetes API client: the few calls it makes (pods of its node: list, watch,
// get; its node: get, merge-patch) and a generic request for later ones, over KubeTransport. A
// general client library costs tens of MiB of memory and most of a second to load for this.
// Pods are parsed once, here at the edge, into PodMetadata.

import type { IncomingMessage } from 'node:http';
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiErrorOf } from './kube-api-error.ts';
import { KubeTransport, type KubeTransportDeps } from './kube-transport.ts';
import { PodLookupError, type PodMetadata, parsePod } from './pod-metadata.ts';
import { type PodWatchEvent, podWatchEvents } from './watch/pod-watch-events.ts';

export { apiStatus, KubeApiError } from './kube-api-error.ts';

export interface CallOptions {
  /** Deadline of this call (default: the client's). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface WatchOptions {
  readonly signal: AbortSignal;
  /** The server ends the watch after this long; the caller then watches again from where it was. */
  readonly timeoutSeconds: number;
  /** A watch that sent nothing (not even a bookmark) this long is taken for dead and ends. */
  readonly idleMs: number;
  /** Deadline for the watch's headers. */
  readonly timeoutMs?: number;
}

export interface PodList {
  readonly pods: readonly PodMetadata[];
  /** Where a watch of the same selection continues. */
  readonly resourceVersion: string;
}

export const MERGE_PATCH = 'application/merge-patch+json';

function seg(s: string): string {
  return encodeURIComponent(s);
}

export class KubeClient {
  readonly #transport: KubeTransport;
  readonly #timeoutMs: number;

  constructor(api: KubeApiConfig, deps: KubeTransportDeps & { readonly timeoutMs?: number } = {}) {
    this.#transport = new KubeTransport(api, deps);
    this.#timeoutMs = deps.timeoutMs ?? 5000;
  }

  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  /**
   * Any call: `body` is sent as JSON (with `contentType`, default application/json). Resolves to
   * the parsed JSON answer of a 2xx; rejects with a KubeApiError holding the status otherwise.
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    call: CallOptions = {},
  ): Promise<unknown> {
    const res = await this.#transport.request({
      method,
      path,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(contentType === undefined ? {} : { contentType }),
      timeoutMs: call.timeoutMs ?? this.#timeoutMs,
      ...(call.signal === undefined ? {} : { signal: call.signal }),
    });
    const what = `${method} ${this.baseUrl}${path}`;
    if (res.status < 200 || res.status > 299) throw apiErrorOf(what, res.status, res.statusText, res.body);
    if (res.body.trim() === '') return undefined;
    try {
      return JSON.parse(res.body) as unknown;
    } catch {
      throw new Error(`${what}: answered ${res.status} with a body that is not JSON`);
    }
  }

  /** One pod; a pod the API does not have rejects with status 404. */
  async getPod(namespace: string, name: string, call: CallOptions = {}): Promise<PodMetadata> {
    const path = `/api/v1/namespaces/${seg(namespace)}/pods/${seg(name)}`;
    return parsePod(await this.request('GET', path, undefined, undefined, call));
  }

  /** The pods of every namespace bound to `nodeName`, and the resourceVersion to watch them from. */
  async listPodsOnNode(nodeName: string, call: CallOptions = {}): Promise<PodList> {
    const body = await this.request('GET', podsOnNodePath(nodeName, {}), undefined, undefined, call);
    const list = body as { items?: unknown; metadata?: { resourceVersion?: unknown } } | undefined;
    const items = list?.items;
    const rv = list?.metadata?.resourceVersion;
    if (!Array.isArray(items) || typeof rv !== 'string') {
      throw new PodLookupError(`pod list of node ${nodeName} lacks items or metadata.resourceVersion`);
    }
    return { pods: items.map(parsePod), resourceVersion: rv };
  }

  /**
   * Watches the pods of `nodeName` from `resourceVersion`. Resolves once the server accepted the
   * watch; rejects with a KubeApiError when it did not (410: the version expired, list again).
   */
  async watchPodsOnNode(
    nodeName: string,
    resourceVersion: string,
    options: WatchOptions,
  ): Promise<AsyncGenerator<PodWatchEvent>> {
    const path = podsOnNodePath(nodeName, watchQuery(resourceVersion, options));
    return podWatchEvents(await this.watchStream(path, options), options.idleMs);
  }

  /**
   * A watch of `path` (its query says what and from which resourceVersion: watchQuery): the
   * response stream once the server accepted it; rejects with a KubeApiError when it did not.
   */
  async watchStream(path: string, options: WatchOptions): Promise<IncomingMessage> {
    const res = await this.#transport.stream({
      method: 'GET',
      path,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      signal: options.signal,
    });
    const status = res.statusCode ?? 0;
    if (status !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
      const what = `watch ${this.baseUrl}${path}`;
      throw apiErrorOf(what, status, res.statusMessage ?? '', Buffer.concat(chunks).toString('utf8'));
    }
    return res;
  }

  async getNode(name: string, call: CallOptions = {}): Promise<unknown> {
    return this.request('GET', `/api/v1/nodes/${seg(name)}`, undefined, undefined, call);
  }

  /** A JSON merge patch (RFC 7386) of a node: `{ metadata: { labels: { k: 'v' } } }`. */
  async mergePatchNode(name: string, patch: unknown, call: CallOptions = {}): Promise<unknown> {
    return this.request('PATCH', `/api/v1/nodes/${seg(name)}`, patch, MERGE_PATCH, call);
  }

  /** Closes pooled connections. */
  close(): void {
    this.#transport.close();
  }
}

/** The query of a watch from `resourceVersion`, with bookmarks, ended by the server after the options' timeout. */
export function watchQuery(resourceVersion: string, options: WatchOptions): Record<string, string> {
  return {
    watch: 'true',
    resourceVersion,
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(options.timeoutSeconds),
  };
}

function podsOnNodePath(nodeName: string, extra: Record<string, string>): string {
  const q = new URLSearchParams({ fieldSelector: `spec.nodeName=${nodeName}`, ...extra });
  return `/api/v1/pods?${q.toString()}`;
}
