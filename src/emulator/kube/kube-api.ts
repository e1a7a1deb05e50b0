// The slice of the Kubernetes API the agent uses: pods (CRUD, merge patch, list and watch with a
// field selector) and nodes (one per launched instance that has a node name).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { VpcState } from '../vpc/state.ts';
import { isJsonObject, type JsonObject, parseFieldSelector, parseLabelSelector, status } from './objects.ts';
import { KubeError, type PodStore, type WatchEvent } from './pod-store.ts';

export interface KubeDeps {
  readonly pods: PodStore;
  readonly state: VpcState;
}

const POD_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/;
const NODE_PATH = /^\/api\/v1\/nodes(?:\/([^/]+))?$/;

/** A reply to send, or 'streaming' when the handler writes the response itself (watch). */
type Answer = readonly [number, JsonObject] | 'streaming';

function send(res: ServerResponse, code: number, body: JsonObject): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

function list(kind: string, resourceVersion: number, items: JsonObject[]): JsonObject {
  return { kind, apiVersion: 'v1', metadata: { resourceVersion: String(resourceVersion) }, items };
}

export class KubeApi {
  readonly #deps: KubeDeps;
  readonly #watches = new Set<ServerResponse>();

  constructor(deps: KubeDeps) {
    this.#deps = deps;
  }

  handle(req: IncomingMessage, res: ServerResponse, url: URL, body: string): void {
    try {
      const answer = this.#route(req, res, url, body);
      if (answer !== 'streaming') send(res, answer[0], answer[1]);
    } catch (err) {
      if (err instanceof KubeError) send(res, err.code, status(err.code, err.reason, err.message));
      else send(res, 400, status(400, 'BadRequest', err instanceof Error ? err.message : String(err)));
    }
  }

  /** End every open watch (emulator shutdown). */
  closeWatches(): void {
    for (const res of this.#watches) res.end();
    this.#watches.clear();
  }

  #route(req: IncomingMessage, res: ServerResponse, url: URL, body: string): Answer {
    const method = req.method ?? 'GET';
    const pods = this.#deps.pods;
    const podPath = POD_PATH.exec(url.pathname);
    if (podPath !== null) {
      const ns = decodeURIComponent(podPath[1] ?? '');
      const name = podPath[2] === undefined ? undefined : decodeURIComponent(podPath[2]);
      if (name === undefined && method === 'GET') return this.#listOrWatch(req, res, url, ns);
      if (name === undefined && method === 'POST') return [201, pods.create(ns, parseBody(body))];
      if (name !== undefined && method === 'GET') return [200, pods.get(ns, name)];
      if (name !== undefined && method === 'DELETE') return [200, pods.delete(ns, name)];
      if (name !== undefined && method === 'PATCH') {
        const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
        const patchTypes = ['application/merge-patch+json', 'application/strategic-merge-patch+json'];
        if (type === undefined || !patchTypes.includes(type)) {
          throw new KubeError(
            415,
            'UnsupportedMediaType',
            `the body of the request was in an unknown format: ${type}`,
          );
        }
        return [200, pods.patch(ns, name, parseBody(body))];
      }
      throw new KubeError(405, 'MethodNotAllowed', `${method} is not supported here`);
    }
    if (url.pathname === '/api/v1/pods' && method === 'GET')
      return this.#listOrWatch(req, res, url, undefined);
    const nodePath = NODE_PATH.exec(url.pathname);
    if (nodePath !== null && method === 'GET') {
      const nodes = this.#nodes();
      if (nodePath[1] === undefined) return [200, list('NodeList', pods.resourceVersion, nodes)];
      const name = decodeURIComponent(nodePath[1]);
      const node = nodes.find((n) => isJsonObject(n.metadata) && n.metadata.name === name);
      if (node === undefined) throw new KubeError(404, 'NotFound', `nodes "${name}" not found`);
      return [200, node];
    }
    throw new KubeError(404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
  }

  #listOrWatch(req: IncomingMessage, res: ServerResponse, url: URL, namespace: string | undefined): Answer {
    const q = url.searchParams;
    const byField = parseFieldSelector(q.get('fieldSelector'));
    const byLabel = parseLabelSelector(q.get('labelSelector'));
    const matches = (pod: JsonObject) =>
      byField(pod) &&
      byLabel(pod) &&
      (namespace === undefined || (isJsonObject(pod.metadata) && pod.metadata.namespace === namespace));
    const pods = this.#deps.pods;
    if (q.get('watch') !== 'true' && q.get('watch') !== '1') {
      return [200, list('PodList', pods.resourceVersion, pods.list().filter(matches))];
    }
    const rvText = q.get('resourceVersion');
    const from = rvText === null || rvText === '' || rvText === '0' ? undefined : Number(rvText);
    if (from !== undefined && !Number.isInteger(from))
      throw new KubeError(400, 'BadRequest', 'bad resourceVersion');
    const backlog: { type: string; object: JsonObject }[] =
      from === undefined
        ? pods
            .list()
            .filter(matches)
            .map((object) => ({ type: 'ADDED', object }))
        : [];
    if (from !== undefined) {
      const events = pods.eventsSince(from);
      if (events === undefined) {
        backlog.push({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from}`) });
      } else {
        backlog.push(...events.filter((e) => matches(e.object)));
      }
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // Send the headers now: a client waits for them before it reads events.
    res.flushHeaders();
    const write = (e: { type: string; object: JsonObject }) => res.write(`${JSON.stringify(e)}\n`);
    for (const e of backlog) write(e);
    if (backlog.some((e) => e.type === 'ERROR')) {
      res.end();
      return 'streaming';
    }
    const unsubscribe = pods.subscribe((e: WatchEvent) => {
      if (matches(e.object)) write({ type: e.type, object: e.object });
    });
    this.#watches.add(res);
    const timeout = Number(q.get('timeoutSeconds') ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const stop = () => {
      unsubscribe();
      if (timer !== undefined) clearTimeout(timer);
      this.#watches.delete(res);
    };
    res.on('close', stop);
    req.on('close', stop);
    return 'streaming';
  }

  #nodes(): JsonObject[] {
    const state = this.#deps.state;
    return state.instances().flatMap((i) => {
      if (i.nodeName === undefined) return [];
      const primary = state.enisOf(i.instanceId).find((e) => e.attachment?.deviceIndex === 0);
      const az = state.subnet(i.subnetId).spec.availabilityZone;
      const node: JsonObject = {
        kind: 'Node',
        apiVersion: 'v1',
        metadata: {
          name: i.nodeName,
          uid: `node-${i.instanceId}`,
          resourceVersion: '1',
          creationTimestamp: i.launchTime.toISOString().replace(/\.\d+Z$/, 'Z'),
          labels: {
            'kubernetes.io/hostname': i.nodeName,
            'kubernetes.io/os': 'linux',
            'node.kubernetes.io/instance-type': i.instanceType,
            'topology.kubernetes.io/region': state.spec.region,
            'topology.kubernetes.io/zone': az,
          },
        },
        spec: { providerID: `aws:///${az}/${i.instanceId}` },
        status: {
          addresses: primary === undefined ? [] : [{ type: 'InternalIP', address: primary.primaryIp }],
          conditions: [{ type: 'Ready', status: 'True' }],
        },
      };
      return [node];
    });
  }
}

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new KubeError(400, 'BadRequest', 'request body is not JSON');
  }
}
