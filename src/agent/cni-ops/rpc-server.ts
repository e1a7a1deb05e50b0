// The agent's RPC server: JSON over HTTP/1.1 on a unix socket created 0600 (root only),
// because whoever can talk to it can attach and detach pod networks.
//
// It faces whatever connects: every CNI request gets an answer the plugin can print (a
// ForwardedResponse, also when the request is refused), a body is read only up to a limit, and a
// client that sends slowly or not at all is cut off, so that no client holds memory or a socket
// for long. Other clients are served meanwhile: nothing here waits on one connection.
import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname } from 'node:path';
import { CNI_ERR_DECODE, CNI_ERR_INTERNAL, CNI_ERR_INVALID_NETCONF, CniError } from '../../cni/errors.ts';
import { errorVersionFor } from '../../cni/versions.ts';
import {
  AGENT_CNI_PATH,
  DEFAULT_CNI_VERSION,
  type ForwardedRequest,
  type ForwardedResponse,
  MAX_REQUEST_BYTES,
} from '../../cni/wire.ts';
import { errorText } from '../../infra/error-text.ts';

export interface RpcHandlers {
  cni(req: ForwardedRequest): Promise<ForwardedResponse>;
  /** true once the agent has rebuilt its state and serves CNI requests. */
  ready(): boolean;
  /** Introspection: a JSON-serializable view of the agent's state. */
  introspect(): unknown;
  /** Why a pod has (no) network (explain.ts); without it, GET /v1/explain is 404. */
  explain?(namespace: string, pod: string): Promise<unknown>;
  /**
   * false once the agent is stopping: a CNI request read then is not answered and its connection
   * is closed, which the plugin handles as an unreachable agent (DEL spooled, ADD "try again").
   */
  accepting?(): boolean;
}

export interface RpcLimits {
  /** Largest request body kept; a larger one is read to its end, dropped, and refused with 413. */
  readonly maxBodyBytes: number;
  /** A connection must deliver a request head within this (else Node answers 408 and closes it). */
  readonly headersTimeoutMs: number;
  /** ... and the whole request within this; the time the agent takes to answer does not count. */
  readonly requestTimeoutMs: number;
  /** How often connections are checked against the two timeouts. */
  readonly timeoutCheckMs: number;
}

/**
 * The plugin writes its whole request at once on a local socket, so it needs milliseconds; the
 * timeouts are generous only so that an agent whose event loop was busy for a while does not cut
 * off honest plugins. The body limit is the plugin's own (MAX_REQUEST_BYTES, src/cni/wire.ts),
 * so a request the plugin sends is never refused for its size; 1 MiB bounds what 200 concurrent
 * clients can make the agent hold (200 MiB).
 */
export const DEFAULT_RPC_LIMITS: RpcLimits = {
  maxBodyBytes: MAX_REQUEST_BYTES,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  timeoutCheckMs: 1_000,
};

type Body = { readonly text: string } | { readonly oversizedBytes: number };

/**
 * Reads the body, keeping at most `max` bytes. An oversized body is still read to its end: the
 * plugin writes all of it before it reads the answer, so closing early would leave it a broken
 * pipe instead of the 413 it can print. The request timeout bounds how long that may take.
 */
function readBody(req: IncomingMessage, max: number): Promise<Body> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
      else chunks = [];
    });
    req.on('end', () => {
      ended = true;
      resolve(size > max ? { oversizedBytes: size } : { text: Buffer.concat(chunks).toString('utf8') });
    });
    req.on('error', reject);
    // A client that goes away mid-body emits neither 'end' nor always 'error'.
    req.on('close', () => {
      if (!ended) reject(new Error(`client closed the connection after ${size} body bytes`));
    });
  });
}

function send(res: ServerResponse, status: number, body: unknown, close = false): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

/** A refused CNI request, answered as a CNI error the plugin prints as it is (with exit code 1). */
function refuse(res: ServerResponse, status: number, err: CniError, cniVersion: string, close = false): void {
  const answer: ForwardedResponse = { exitCode: 1, stdout: `${JSON.stringify(err.toJson(cniVersion))}\n` };
  send(res, status, answer, close);
}

/** Parses the forwarded request at the edge; the CNI handler trusts its types. */
function parseForwarded(text: string): ForwardedRequest | { problem: string; cniVersion: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { problem: 'body is not JSON', cniVersion: DEFAULT_CNI_VERSION };
  }
  if (typeof raw !== 'object' || raw === null) {
    return { problem: 'body is not an object', cniVersion: DEFAULT_CNI_VERSION };
  }
  const { env, stdin } = raw as { env?: unknown; stdin?: unknown };
  if (typeof stdin !== 'string')
    return { problem: 'stdin must be a string', cniVersion: DEFAULT_CNI_VERSION };
  const cniVersion = errorVersionFor(stdin);
  if (typeof env !== 'object' || env === null) return { problem: 'env must be an object', cniVersion };
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (typeof v !== 'string') return { problem: `env.${k} must be a string`, cniVersion };
    clean[k] = v;
  }
  return { env: clean, stdin };
}

async function serveCni(
  handlers: RpcHandlers,
  limits: RpcLimits,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const body = await readBody(req, limits.maxBodyBytes);
  if ('oversizedBytes' in body) {
    // A permanent error (code 7, as the plugin reports an oversized request): never retried.
    const err = new CniError(
      CNI_ERR_INVALID_NETCONF,
      `request to the vpcnet agent is larger than ${limits.maxBodyBytes} bytes`,
      `${body.oversizedBytes} bytes of network configuration and CNI_* environment`,
    );
    refuse(res, 413, err, DEFAULT_CNI_VERSION, true);
    return;
  }
  const parsed = parseForwarded(body.text);
  if ('problem' in parsed) {
    const err = new CniError(CNI_ERR_DECODE, 'the vpcnet agent cannot decode the request', parsed.problem);
    refuse(res, 400, err, parsed.cniVersion);
    return;
  }
  if (handlers.accepting?.() === false) {
    req.socket.destroy();
    return;
  }
  const answer = await handlers.cni(parsed);
  // Answered while the agent stops: the connection closes after it, so the stop need not wait.
  send(res, 200, answer, handlers.accepting?.() === false);
}

/** GET /v1/explain?namespace=NS&pod=NAME */
async function serveExplain(
  explain: NonNullable<RpcHandlers['explain']>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const query = new URL(req.url ?? '/', 'http://agent').searchParams;
  const namespace = query.get('namespace');
  const pod = query.get('pod');
  if (!namespace || !pod) {
    send(res, 400, { error: 'explain needs the query parameters namespace and pod' });
    return;
  }
  send(res, 200, await explain(namespace, pod));
}

async function route(
  handlers: RpcHandlers,
  limits: RpcLimits,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/v1/healthz') {
    send(res, handlers.ready() ? 200 : 503, { ready: handlers.ready() }, handlers.accepting?.() === false);
    return;
  }
  if (req.method === 'GET' && path === '/v1/state') {
    send(res, 200, handlers.introspect(), handlers.accepting?.() === false);
    return;
  }
  if (req.method === 'GET' && path === '/v1/explain' && handlers.explain) {
    await serveExplain(handlers.explain, req, res);
    return;
  }
  if (req.method === 'POST' && path === AGENT_CNI_PATH) {
    await serveCni(handlers, limits, req, res);
    return;
  }
  send(res, 404, { error: `no route ${req.method} ${path}` });
}

export async function startRpcServer(
  socketPath: string,
  handlers: RpcHandlers,
  limits: RpcLimits = DEFAULT_RPC_LIMITS,
): Promise<Server> {
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  await rm(socketPath, { force: true });
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.timeoutCheckMs,
    },
    (req, res) => {
      route(handlers, limits, req, res).catch((err: unknown) => {
        if (res.headersSent || res.destroyed) {
          res.destroy();
          return;
        }
        const internal = new CniError(
          CNI_ERR_INTERNAL,
          'vpcnet agent failed to serve the request',
          errorText(err),
        );
        refuse(res, 500, internal, DEFAULT_CNI_VERSION);
      });
    },
  );
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

/**
 * Stops listening (new connections are refused; the socket file goes) and closes idle
 * connections; resolves once every connection has ended. Requests being served go on.
 */
export function closeRpcListener(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

export function stopRpcServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
