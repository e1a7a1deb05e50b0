// JSON over HTTP on a unix socket: how the lab talks to the emulator's admin API and to agents.
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorText } from '../infra/error-text.ts';
import { labTimeout } from './timeouts.ts';

export interface UnixHttpResponse {
  readonly status: number;
  readonly body: string;
}

export function unixHttp(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = labTimeout(10_000),
): Promise<UnixHttpResponse> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath,
        method,
        path,
        // A length, not chunks: node frames no body of a DELETE by default, and the server would
        // read it as the next request. A PATCH body is a JSON merge patch (what the Kubernetes
        // slice accepts for pods and nodes).
        headers:
          payload === undefined
            ? {}
            : {
                'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
                'content-length': String(Buffer.byteLength(payload)),
              },
        timeout: timeoutMs,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${method} ${path} on ${socketPath}: no answer in ${timeoutMs} ms`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * The message of an emulator's error answer: the admin API's and the Kubernetes slice's JSON carry
 * one (`{code, message}`, a Status), else the body itself, cut short.
 */
export function answerMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: unknown; code?: unknown };
    if (typeof parsed.message === 'string') {
      return typeof parsed.code === 'string' ? `${parsed.message} (${parsed.code})` : parsed.message;
    }
  } catch {
    // not JSON: quote it as it is
  }
  return body.trim().slice(0, 500);
}

/** An emulator refused a call: what it said, and which call it was. */
export class EmulatorRefused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    what: string,
  ) {
    super(`${reason} (${what} answered ${status})`);
    this.name = 'EmulatorRefused';
  }
}

/** Sends a JSON request and parses a 2xx JSON answer; anything else is an EmulatorRefused naming the call. */
export async function unixJson(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const res = await unixHttp(socketPath, method, path, body);
  if (res.status < 200 || res.status > 299) {
    throw new EmulatorRefused(res.status, answerMessage(res.body), `${method} ${path}`);
  }
  return res.body === '' ? undefined : (JSON.parse(res.body) as unknown);
}

/**
 * Polls `GET path` until it answers 200. `failed` is consulted between attempts so that a
 * process that died stops the wait early with its own reason.
 */
export async function waitForHttp200(
  socketPath: string,
  path: string,
  timeoutMs: number,
  failed: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    const reason = failed();
    if (reason !== undefined) throw new Error(reason);
    try {
      const res = await unixHttp(socketPath, 'GET', path, undefined, labTimeout(2000));
      if (res.status === 200) return;
      last = `answered ${res.status}`;
    } catch (err) {
      last = errorText(err);
    }
    if (Date.now() >= deadline)
      throw new Error(`GET ${path} on ${socketPath}: not ready after ${timeoutMs} ms (${last})`);
    await sleep(100);
  }
}
