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
        // read it as the next request.
        headers:
          payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) },
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

/** Sends a JSON request and parses a 2xx JSON answer; anything else is an error naming the call. */
export async function unixJson(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const res = await unixHttp(socketPath, method, path, body);
  if (res.status < 200 || res.status > 299) {
    throw new Error(
      `${method} ${path} on ${socketPath} answered ${res.status}: ${res.body.trim().slice(0, 500)}`,
    );
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
