// The agent's RPC server: JSON over HTTP/1.1 on a unix socket created 0600 (root only),
// because whoever can talk to it can attach and detach pod networks.
import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { AGENT_CNI_PATH, type ForwardedRequest, type ForwardedResponse } from '../cni/wire.ts';
import { errorText } from '../infra/error-text.ts';

export interface RpcHandlers {
  cni(req: ForwardedRequest): Promise<ForwardedResponse>;
  /** true once the agent has rebuilt its state and serves CNI requests. */
  ready(): boolean;
  /** Introspection: a JSON-serializable view of the agent's state. */
  introspect(): unknown;
}

const MAX_BODY = 1 << 20;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error(`request body over ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Parses the forwarded request at the edge; the CNI handler trusts its types. */
function parseForwarded(text: string): ForwardedRequest | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'body is not JSON';
  }
  if (typeof raw !== 'object' || raw === null) return 'body is not an object';
  const { env, stdin } = raw as { env?: unknown; stdin?: unknown };
  if (typeof stdin !== 'string') return 'stdin must be a string';
  if (typeof env !== 'object' || env === null) return 'env must be an object';
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (typeof v !== 'string') return `env.${k} must be a string`;
    clean[k] = v;
  }
  return { env: clean, stdin };
}

async function route(handlers: RpcHandlers, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/v1/healthz') {
    send(res, handlers.ready() ? 200 : 503, { ready: handlers.ready() });
    return;
  }
  if (req.method === 'GET' && path === '/v1/state') {
    send(res, 200, handlers.introspect());
    return;
  }
  if (req.method === 'POST' && path === AGENT_CNI_PATH) {
    const parsed = parseForwarded(await readBody(req));
    if (typeof parsed === 'string') {
      send(res, 400, { error: parsed });
      return;
    }
    send(res, 200, await handlers.cni(parsed));
    return;
  }
  send(res, 404, { error: `no route ${req.method} ${path}` });
}

export async function startRpcServer(socketPath: string, handlers: RpcHandlers): Promise<Server> {
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  await rm(socketPath, { force: true });
  const server = createServer((req, res) => {
    route(handlers, req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { error: errorText(err) });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;
  // umask around listen so the socket never exists with wider permissions, then chmod to be explicit.
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(oldMask);
  }
  await chmod(socketPath, 0o600);
  return server;
}

export function stopRpcServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
