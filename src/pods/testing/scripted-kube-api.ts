// A Kubernetes API server whose answers a test writes, one request at a time: what the emulator's
// well-behaved slice cannot be made to do on cue (close a watch now, answer 410 or 401, never
// answer, serve TLS with a throwaway CA). It records every request it saw.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string;
  /** Is it a watch (`watch=true`)? */
  readonly watch: boolean;
}

export type Responder = (req: SeenRequest, res: ServerResponse) => void;

export interface ScriptedKubeApiOptions {
  /** Serve HTTPS with this key and certificate (PEM). */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer };
}

export class ScriptedKubeApi {
  readonly seen: SeenRequest[] = [];
  /** Answers the next request; a test replaces it as the script goes on. */
  respond: Responder = (_req, res) => sendJson(res, 404, status(404, 'NotFound', 'nothing scripted'));
  readonly #server: Server;
  readonly #open = new Set<ServerResponse>();
  #url = '';
  /** TCP connections accepted (keep-alive makes one serve many requests). */
  connections = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(options: ScriptedKubeApiOptions = {}): Promise<ScriptedKubeApi> {
    let api: ScriptedKubeApi | undefined;
    const handler = (req: IncomingMessage, res: ServerResponse) => void api?.handle(req, res);
    const server = options.tls ? createHttpsServer(options.tls, handler) : createHttpServer(handler);
    api = new ScriptedKubeApi(server);
    server.on('connection', () => {
      if (api) api.connections++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    api.#url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    return api;
  }

  get url(): string {
    return this.#url;
  }

  /** Requests seen that were watches / lists (GET of a collection without watch). */
  watches(): SeenRequest[] {
    return this.seen.filter((r) => r.watch);
  }

  lists(): SeenRequest[] {
    return this.seen.filter((r) => !r.watch && r.method === 'GET' && r.path === '/api/v1/pods');
  }

  /** Responses still open (watch streams the script has not ended). */
  get openResponses(): number {
    return this.#open.size;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const url = new URL(req.url ?? '/', 'http://scripted');
    const seen: SeenRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      body: Buffer.concat(chunks).toString('utf8'),
      watch: url.searchParams.get('watch') === 'true',
    };
    this.seen.push(seen);
    this.#open.add(res);
    res.on('close', () => this.#open.delete(res));
    this.respond(seen, res);
  }

  async close(): Promise<void> {
    for (const res of this.#open) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

/** Starts a watch stream: headers now, events as `event` is called. */
export function openWatch(res: ServerResponse): (type: string, object: unknown) => void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.flushHeaders();
  return (type, object) => res.write(`${JSON.stringify({ type, object })}\n`);
}

export function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

export function podObject(
  name: string,
  resourceVersion: string,
  nodeName = 'node-1',
): Record<string, unknown> {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion },
    spec: { nodeName, containers: [{ name: 'app', image: 'pause' }] },
  };
}

export function podList(resourceVersion: string, names: readonly string[]): Record<string, unknown> {
  return {
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: { resourceVersion },
    items: names.map((n) => podObject(n, resourceVersion)),
  };
}
