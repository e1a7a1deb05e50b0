// Sends one ForwardedRequest to the agent: HTTP/1.1 POST over its unix socket.
import { request as httpRequest } from 'node:http';
import { AGENT_CNI_PATH, type ForwardedRequest, type ForwardedResponse } from '../cni/wire.ts';

export interface ForwardTimeouts {
  /** Connecting to a unix socket is immediate when the agent listens; waiting long only delays the fallback. */
  readonly connectMs: number;
  /** Whole exchange; an ADD may wait for the cloud to attach an ENI. */
  readonly totalMs: number;
}

export const DEFAULT_FORWARD_TIMEOUTS: ForwardTimeouts = { connectMs: 2_000, totalMs: 120_000 };

/** The largest answer body read (bin/vpcnet holds it in a static buffer: RESPONSE_MAX in bounds.h). */
export const MAX_RESPONSE_BYTES = 1 << 20;

/** sun_path holds 108 bytes with the terminating NUL (Linux). */
export const SOCKET_PATH_MAX = 107;

/**
 * Why `path` cannot be a unix socket address, or undefined. libuv would silently cut a longer
 * path (or one with a NUL) short and connect to whatever socket that shorter path names.
 */
export function socketPathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'contains a NUL byte';
  const bytes = Buffer.byteLength(path);
  if (bytes > SOCKET_PATH_MAX) {
    return `is ${bytes} bytes long, more than the ${SOCKET_PATH_MAX} a unix socket path can hold`;
  }
  return undefined;
}

export type AgentTransport = (socketPath: string, request: ForwardedRequest) => Promise<ForwardedResponse>;

/**
 * No answer came from the agent (no socket, refused, reset, timed out). The caller may fall
 * back (spool a DEL, ask for a retry) because the agent did not report an outcome.
 */
export class AgentUnreachableError extends Error {
  constructor(
    readonly socketPath: string,
    readonly reason: string,
  ) {
    super(`vpcnet agent not reachable at ${socketPath}: ${reason}`);
    this.name = 'AgentUnreachableError';
  }
}

/** The agent refused the request as over its size limit (HTTP 413): it can never pass. */
export class AgentRefusedTooLargeError extends Error {
  constructor(readonly socketPath: string) {
    super(`the vpcnet agent at ${socketPath} refused it (HTTP 413)`);
    this.name = 'AgentRefusedTooLargeError';
  }
}

/** The agent answered, but not with a ForwardedResponse (wrong status or body). */
export class AgentProtocolError extends Error {
  constructor(
    readonly socketPath: string,
    readonly reason: string,
  ) {
    super(`vpcnet agent at ${socketPath} answered badly: ${reason}`);
    this.name = 'AgentProtocolError';
  }
}

export function httpTransport(timeouts: ForwardTimeouts = DEFAULT_FORWARD_TIMEOUTS): AgentTransport {
  return (socketPath, request) => forwardToAgent(socketPath, request, timeouts);
}

export function forwardToAgent(
  socketPath: string,
  request: ForwardedRequest,
  timeouts: ForwardTimeouts,
): Promise<ForwardedResponse> {
  const body = JSON.stringify(request);
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, value?: ForwardedResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      clearTimeout(totalTimer);
      if (err !== undefined) {
        req.destroy();
        reject(err);
      } else if (value !== undefined) {
        resolve(value);
      }
    };
    const unreachable = (reason: string): void => finish(new AgentUnreachableError(socketPath, reason));

    const req = httpRequest({
      socketPath,
      path: AGENT_CNI_PATH,
      method: 'POST',
      // No keep-alive: the plugin exits right after, and an idle socket would hold the event loop.
      agent: false,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      },
    });
    const connectTimer = setTimeout(
      () => unreachable(`no connection within ${timeouts.connectMs} ms`),
      timeouts.connectMs,
    );
    const totalTimer = setTimeout(
      () => unreachable(`no answer within ${timeouts.totalMs} ms`),
      timeouts.totalMs,
    );
    req.on('socket', (socket) => socket.once('connect', () => clearTimeout(connectTimer)));
    req.on('error', (err: NodeJS.ErrnoException) => unreachable(err.message));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          finish(new AgentProtocolError(socketPath, `response larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', (err: NodeJS.ErrnoException) => unreachable(err.message));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        // Whatever its body says: the request cannot pass, so never "try again later".
        if (res.statusCode === 413) {
          finish(new AgentRefusedTooLargeError(socketPath));
          return;
        }
        if (res.statusCode !== 200) {
          // A refusal the agent worded as a CNI error (413, 400, ...) is printed as it is.
          const refusal = decodeResponse(text);
          if (typeof refusal !== 'string' && refusal.exitCode !== 0) finish(undefined, refusal);
          else finish(new AgentProtocolError(socketPath, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
          return;
        }
        const parsed = decodeResponse(text);
        if (typeof parsed === 'string') finish(new AgentProtocolError(socketPath, parsed));
        else finish(undefined, parsed);
      });
    });
    req.end(body);
  });
}

/** The response, or why it is not one. */
function decodeResponse(text: string): ForwardedResponse | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `body is not JSON: ${text.slice(0, 200)}`;
  }
  if (typeof value !== 'object' || value === null) return 'body is not a JSON object';
  const { exitCode, stdout } = value as { exitCode?: unknown; stdout?: unknown };
  if (typeof exitCode !== 'number' || !Number.isInteger(exitCode) || exitCode < 0 || exitCode > 255) {
    return 'exitCode must be an integer 0–255';
  }
  if (typeof stdout !== 'string') return 'stdout must be a string';
  return { exitCode, stdout };
}
