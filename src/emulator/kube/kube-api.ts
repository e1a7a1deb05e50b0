// The slice of the Kubernetes API that vpcnet and the emulated resource controller use: pods
// (create, get, delete, patch, list and watch, across or within namespaces), nodes (get,
// patch, list and watch; nodes/{name}/status get and patch), ENIConfigs (crd.k8s.amazonaws.com/v1alpha1) and CNINodes
// (vpcresources.k8s.aws/v1alpha1), both create, get, update, delete, patch, list and watch, and
// core v1 events (create, get, list, across or within namespaces), configmaps, apps/v1 daemonsets and
// coordination.k8s.io/v1 leases (create, get, update, patch, delete, list, watch). Patches are merge patches
// (JSON merge or strategic merge, which act alike on the maps patched here: labels and
// annotations) or JSON patches (json-patch.ts). A resourceVersion a write carries is a
// precondition (409 Conflict when the object changed since). pods/{name}/exec over WebSocket
// (pod-exec.ts), run by the container runtime given, and the discovery documents kubectl reads
// first (discovery.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorText } from '../../infra/error-text.ts';
import { discoveryDocument } from './discovery.ts';
import { applyJsonPatch } from './json-patch.ts';
import type { ObjectStore } from './object-store.ts';
import { KubeError } from './object-store.ts';
import { isJsonObject, type JsonObject, status } from './objects.ts';
import { type ContainerRuntime, POD_EXEC_PATH, PodExec } from './pod-exec.ts';
import { patchStatus } from './status-patch.ts';
import { ListWatch } from './watch-stream.ts';
import { refuseUpgrade } from './websocket.ts';

export interface KubeDeps {
  readonly pods: ObjectStore;
  readonly nodes: ObjectStore;
  /** Core v1 events (what the agent reports on pods and its node); absent: the API has none. */
  readonly events?: ObjectStore;
  /** ENIConfig objects (custom networking); absent: the API has none. */
  readonly eniConfigs?: ObjectStore;
  /** CNINode objects (the features a node asks of the resource controller); absent: none. */
  readonly cniNodes?: ObjectStore;
  /** Leases (coordination.k8s.io/v1): leader election; absent: the API has none. */
  readonly leases?: ObjectStore;
  /** apps/v1 DaemonSets (create, get, update, delete, patch, list); absent: the API has none. */
  readonly daemonSets?: ObjectStore;
  /** Core v1 ConfigMaps (create, get, update, delete, patch, list); absent: the API has none. */
  readonly configMaps?: ObjectStore;
  /** Runs what pods/{name}/exec asks (pod-exec.ts); absent: every exec is refused. */
  readonly containerRuntime?: ContainerRuntime;
  /** How often a quiet watch that allows bookmarks gets one (default 10 s). */
  readonly bookmarkIntervalMs?: number;
  /** One line per write (the API server's audit log, for tests of who changed what). */
  readonly log?: (line: Record<string, unknown>) => void;
}

/** Fields a write's log line says it changed when they did (a taint written, a condition set). */
const WATCHED_FIELDS: readonly (readonly string[])[] = [
  ['spec', 'taints'],
  ['status', 'conditions'],
  ['metadata', 'labels'],
  ['metadata', 'annotations'],
  ['spec', 'holderIdentity'],
];

const POD_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/;
const NODE_PATH = /^\/api\/v1\/nodes(?:\/([^/]+))?$/;
const NODE_STATUS_PATH = /^\/api\/v1\/nodes\/([^/]+)\/status$/;
const LEASE_PATH = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/;
const ENI_CONFIG_PATH = /^\/apis\/crd\.k8s\.amazonaws\.com\/v1alpha1\/eniconfigs(?:\/([^/]+))?$/;
const CNI_NODE_PATH = /^\/apis\/vpcresources\.k8s\.aws\/v1alpha1\/cninodes(?:\/([^/]+))?$/;
const EVENT_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/;
const DAEMON_SET_PATH = /^\/apis\/apps\/v1\/namespaces\/([^/]+)\/daemonsets(?:\/([^/]+))?$/;
const CONFIG_MAP_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/configmaps(?:\/([^/]+))?$/;
const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
const MERGE_PATCH_TYPES = ['application/merge-patch+json', STRATEGIC_MERGE_PATCH];
const JSON_PATCH_TYPE = 'application/json-patch+json';

/** A reply to send, or undefined when the handler streams the response itself (watch). */
type Answer = readonly [number, JsonObject] | undefined;

function send(res: ServerResponse, code: number, body: JsonObject): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

export class KubeApi {
  readonly #deps: KubeDeps;
  readonly #listWatch: ListWatch;
  readonly #exec: PodExec;

  constructor(deps: KubeDeps) {
    this.#deps = deps;
    this.#listWatch = new ListWatch({ bookmarkIntervalMs: deps.bookmarkIntervalMs ?? 10_000 });
    this.#exec = new PodExec({
      pods: deps.pods,
      ...(deps.containerRuntime === undefined ? {} : { runtime: deps.containerRuntime }),
      ...(deps.log === undefined ? {} : { log: deps.log }),
    });
  }

  /** A request to upgrade the connection (node's `upgrade` event): only pods/{name}/exec takes one. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (POD_EXEC_PATH.test(url.pathname)) {
      this.#exec.upgrade(req, socket, head, url);
      return;
    }
    const message = `${url.pathname} takes no upgrade (only pods/{name}/exec streams here)`;
    refuseUpgrade(socket, 400, status(400, 'BadRequest', message));
  }

  handle(req: IncomingMessage, res: ServerResponse, url: URL, body: string): void {
    const method = req.method ?? 'GET';
    const write = method !== 'GET';
    const before = write ? this.#current(url) : undefined;
    let code: number;
    let answer: Answer;
    try {
      answer = this.#route(req, res, url, body);
      code = answer?.[0] ?? 200;
      if (answer !== undefined) send(res, code, answer[1]);
    } catch (err) {
      const e = err instanceof KubeError ? err : new KubeError(400, 'BadRequest', errorText(err));
      code = e.code;
      send(res, e.code, status(e.code, e.reason, e.message));
    }
    if (write && this.#deps.log !== undefined) {
      const changed = code < 300 ? changedFields(before, answer?.[1]) : [];
      this.#deps.log({
        msg: 'kube',
        method,
        path: url.pathname,
        status: code,
        ...(changed.length > 0 ? { changed } : {}),
        // The keys a node holds after a write that changed its taints: who put a taint on, and
        // when, is then read from this log alone (the storm's and the lab's taint judges use it).
        ...(changed.includes('spec.taints') ? { taints: taintKeys(answer?.[1]) } : {}),
      });
    }
  }

  /** The object a write's URL names, as it is before the write (for the log's `changed`). */
  #current(url: URL): JsonObject | undefined {
    const node = NODE_STATUS_PATH.exec(url.pathname) ?? NODE_PATH.exec(url.pathname);
    if (node?.[1] !== undefined) return this.#deps.nodes.find(undefined, decodeURIComponent(node[1]));
    const lease = LEASE_PATH.exec(url.pathname);
    if (lease?.[2] !== undefined && this.#deps.leases !== undefined) {
      return this.#deps.leases.find(decodeURIComponent(lease[1] ?? ''), decodeURIComponent(lease[2]));
    }
    return undefined;
  }

  /** End every open watch (emulator shutdown). */
  closeWatches(): void {
    this.#listWatch.closeAll();
  }

  /** End every exec: its command killed, its WebSocket closed (emulator shutdown). */
  closeExecs(): void {
    this.#exec.closeAll();
  }

  #route(req: IncomingMessage, res: ServerResponse, url: URL, body: string): Answer {
    const method = req.method ?? 'GET';
    const discovery = method === 'GET' ? discoveryDocument(url.pathname) : undefined;
    if (discovery !== undefined) return [200, discovery];
    if (POD_EXEC_PATH.test(url.pathname)) {
      // What the API server answers an exec that asks for no stream protocol.
      throw new KubeError(400, 'BadRequest', 'Upgrade request required');
    }
    const podPath = POD_PATH.exec(url.pathname);
    if (podPath !== null) {
      const ns = decodeURIComponent(podPath[1] ?? '');
      const name = podPath[2] === undefined ? undefined : decodeURIComponent(podPath[2]);
      return this.#resource(req, res, url, body, this.#deps.pods, ns, name);
    }
    if (url.pathname === '/api/v1/pods' && method === 'GET') {
      return this.#listWatch.serve(res, url, this.#deps.pods, undefined);
    }
    const events = this.#deps.events;
    const eventPath = EVENT_PATH.exec(url.pathname);
    if (events !== undefined && eventPath !== null) {
      const ns = decodeURIComponent(eventPath[1] ?? '');
      const name = eventPath[2] === undefined ? undefined : decodeURIComponent(eventPath[2]);
      return this.#resource(req, res, url, body, events, ns, name);
    }
    if (events !== undefined && url.pathname === '/api/v1/events' && method === 'GET') {
      return this.#listWatch.serve(res, url, events, undefined);
    }
    const configMapPath = CONFIG_MAP_PATH.exec(url.pathname);
    if (this.#deps.configMaps !== undefined && configMapPath !== null) {
      const ns = decodeURIComponent(configMapPath[1] ?? '');
      const name = configMapPath[2] === undefined ? undefined : decodeURIComponent(configMapPath[2]);
      return this.#resource(req, res, url, body, this.#deps.configMaps, ns, name);
    }
    const daemonSetPath = DAEMON_SET_PATH.exec(url.pathname);
    if (this.#deps.daemonSets !== undefined && daemonSetPath !== null) {
      const ns = decodeURIComponent(daemonSetPath[1] ?? '');
      const name = daemonSetPath[2] === undefined ? undefined : decodeURIComponent(daemonSetPath[2]);
      return this.#resource(req, res, url, body, this.#deps.daemonSets, ns, name);
    }
    const eniConfigPath = ENI_CONFIG_PATH.exec(url.pathname);
    if (this.#deps.eniConfigs !== undefined && eniConfigPath !== null) {
      const name = eniConfigPath[1] === undefined ? undefined : decodeURIComponent(eniConfigPath[1]);
      return this.#resource(req, res, url, body, this.#deps.eniConfigs, undefined, name);
    }
    const cniNodePath = CNI_NODE_PATH.exec(url.pathname);
    if (this.#deps.cniNodes !== undefined && cniNodePath !== null) {
      const name = cniNodePath[1] === undefined ? undefined : decodeURIComponent(cniNodePath[1]);
      return this.#resource(req, res, url, body, this.#deps.cniNodes, undefined, name);
    }
    const leasePath = LEASE_PATH.exec(url.pathname);
    if (this.#deps.leases !== undefined && leasePath !== null) {
      const ns = decodeURIComponent(leasePath[1] ?? '');
      const name = leasePath[2] === undefined ? undefined : decodeURIComponent(leasePath[2]);
      return this.#resource(req, res, url, body, this.#deps.leases, ns, name);
    }
    const nodeStatus = NODE_STATUS_PATH.exec(url.pathname);
    if (nodeStatus !== null) return this.#nodeStatus(req, decodeURIComponent(nodeStatus[1] ?? ''), body);
    const nodePath = NODE_PATH.exec(url.pathname);
    if (nodePath !== null) {
      const name = nodePath[1] === undefined ? undefined : decodeURIComponent(nodePath[1]);
      if (name === undefined && method === 'POST') {
        throw new KubeError(405, 'MethodNotAllowed', 'nodes are registered by launching an instance');
      }
      return this.#resource(req, res, url, body, this.#deps.nodes, undefined, name);
    }
    throw new KubeError(404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
  }

  /** nodes/{name}/status: GET, or a PATCH that changes the status alone (status-patch.ts). */
  #nodeStatus(req: IncomingMessage, name: string, body: string): Answer {
    const method = req.method ?? 'GET';
    const nodes = this.#deps.nodes;
    if (method === 'GET') return [200, nodes.get(undefined, name)];
    if (method !== 'PATCH') throw new KubeError(405, 'MethodNotAllowed', `${method} is not supported here`);
    const type = patchType(req);
    if (!MERGE_PATCH_TYPES.includes(type)) {
      throw new KubeError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format: ${type}; accepted: ${MERGE_PATCH_TYPES.join(', ')}`,
      );
    }
    const current = nodes.get(undefined, name);
    const patched = patchStatus(current, parseBody(body), type === STRATEGIC_MERGE_PATCH);
    return [200, nodes.replace(undefined, name, patched)];
  }

  #resource(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    body: string,
    store: ObjectStore,
    namespace: string | undefined,
    name: string | undefined,
  ): Answer {
    const method = req.method ?? 'GET';
    if (name === undefined) {
      if (method === 'GET') return this.#listWatch.serve(res, url, store, namespace);
      if (method === 'POST') return [201, store.create(namespace, parseBody(body))];
    } else {
      if (method === 'GET') return [200, store.get(namespace, name)];
      if (method === 'DELETE') return [200, store.delete(namespace, name)];
      if (method === 'PUT') return [200, store.update(namespace, name, parseBody(body))];
      if (method === 'PATCH') {
        const type = patchType(req);
        if (type === JSON_PATCH_TYPE) {
          const patched = applyJsonPatch(store.get(namespace, name), parseBody(body));
          return [200, store.replace(namespace, name, patched)];
        }
        if (!MERGE_PATCH_TYPES.includes(type)) {
          const accepted = [...MERGE_PATCH_TYPES, JSON_PATCH_TYPE].join(', ');
          throw new KubeError(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format: ${type}; accepted: ${accepted}`,
          );
        }
        return [200, store.patch(namespace, name, parseBody(body))];
      }
    }
    throw new KubeError(405, 'MethodNotAllowed', `${method} is not supported here`);
  }
}

function patchType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
}

function taintKeys(o: JsonObject | undefined): string[] {
  const spec = o?.spec;
  const taints = isJsonObject(spec) && Array.isArray(spec.taints) ? spec.taints : [];
  return taints.flatMap((t) => (isJsonObject(t) && typeof t.key === 'string' ? [t.key] : []));
}

/** Which of WATCHED_FIELDS differ between an object before a write and after it. */
function changedFields(before: JsonObject | undefined, after: JsonObject | undefined): string[] {
  const at = (o: JsonObject | undefined, path: readonly string[]) => {
    let v: unknown = o;
    for (const p of path) v = isJsonObject(v) ? v[p] : undefined;
    return JSON.stringify(v ?? null);
  };
  return WATCHED_FIELDS.filter((path) => at(before, path) !== at(after, path)).map((path) => path.join('.'));
}

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new KubeError(400, 'BadRequest', 'request body is not JSON');
  }
}
