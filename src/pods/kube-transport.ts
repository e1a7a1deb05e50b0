// HTTP(S) to the Kubernetes API: one keep-alive connection pool, the bearer token of the agent's
// service account (read again when it rotates), the cluster's CA bundle, and a deadline on every
// call so that an ADD never hangs on the API. The lab's API is plain HTTP without a token.
import { readFile } from 'node:fs/promises';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { errorText } from '../infra/error-text.ts';
import { BearerTokenFile } from './bearer-token.ts';
import type { KubeApiConfig } from './kube-api-config.ts';

export interface KubeRequest {
  readonly method: string;
  /** Path and query below the base URL: `/api/v1/nodes/n1`. */
  readonly path: string;
  readonly body?: string;
  readonly contentType?: string;
  /** The whole exchange (connect, headers, body; for a stream: until its headers) must end by then. */
  readonly timeoutMs: number;
  /** Aborts the call (the agent stops); a stream ends when it fires. */
  readonly signal?: AbortSignal;
}

export interface KubeResponse {
  readonly status: number;
  readonly statusText: string;
  readonly body: string;
}

export interface KubeTransportDeps {
  readonly token?: BearerTokenFile;
  readonly readCa?: (path: string) => Promise<Buffer>;
}

/** A body larger than this is not a pod list of one node: fail instead of holding it. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** A reused keep-alive socket the server had already closed: safe to send a GET again. */
class StaleSocket extends Error {}

export class KubeTransport {
  readonly baseUrl: string;
  readonly #caFile: string | undefined;
  readonly #https: boolean;
  readonly #token: BearerTokenFile | undefined;
  readonly #readCa: (path: string) => Promise<Buffer>;
  #agent: Promise<HttpAgent> | undefined;

  constructor(api: KubeApiConfig, deps: KubeTransportDeps = {}) {
    this.baseUrl = api.baseUrl.replace(/\/+$/, '');
    this.#https = this.baseUrl.startsWith('https:');
    this.#caFile = api.caFile;
    this.#token = deps.token ?? (api.token === undefined ? undefined : new BearerTokenFile(api.token));
    this.#readCa = deps.readCa ?? ((p) => readFile(p));
  }

  /** One call, its whole answer read. Rejects only when there is no answer; any status resolves. */
  async request(req: KubeRequest): Promise<KubeResponse> {
    return this.#bounded(req, async (signal, release) => {
      try {
        const res = await this.#respond(req, signal);
        const body = await readBody(res);
        return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', body };
      } finally {
        release();
      }
    });
  }

  /**
   * A GET whose body the caller reads as it arrives (a watch). The deadline covers the headers;
   * after them the caller bounds the stream, which ends when `req.signal` fires.
   */
  async stream(req: KubeRequest): Promise<IncomingMessage> {
    return this.#bounded(req, async (signal, release) => {
      const res = await this.#respond(req, signal).catch((err: unknown) => {
        release();
        throw err;
      });
      res.once('close', release);
      return res;
    });
  }

  /** Closes pooled connections (the agent stops). */
  close(): void {
    void this.#agent?.then(
      (a) => a.destroy(),
      () => {}, // no pool was made: nothing to close
    );
  }

  /** Runs `work` with a signal that fires at the deadline or when the caller's signal fires. */
  async #bounded<T>(
    req: KubeRequest,
    work: (signal: AbortSignal, release: () => void) => Promise<T>,
  ): Promise<T> {
    const what = `${req.method} ${this.baseUrl}${req.path}`;
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, req.timeoutMs);
    const stop = () => abort.abort();
    req.signal?.addEventListener('abort', stop, { once: true });
    if (req.signal?.aborted) abort.abort();
    const release = () => req.signal?.removeEventListener('abort', stop);
    try {
      return await work(abort.signal, release);
    } catch (err) {
      if (timedOut) throw new Error(`${what}: no answer within ${req.timeoutMs} ms`, { cause: err });
      if (req.signal?.aborted) throw new Error(`${what}: stopped`, { cause: err });
      throw new Error(`${what}: ${errorText(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends once; again on a stale pooled socket (GET), and with a re-read token after a 401. */
  async #respond(req: KubeRequest, signal: AbortSignal): Promise<IncomingMessage> {
    let token = await this.#token?.current();
    let resent = false;
    let reauthenticated = false;
    for (;;) {
      let res: IncomingMessage;
      try {
        res = await this.#send(req, token, signal);
      } catch (err) {
        if (err instanceof StaleSocket && req.method === 'GET' && !resent) {
          resent = true;
          continue;
        }
        throw err instanceof StaleSocket ? (err.cause ?? err) : err;
      }
      if (res.statusCode === 401 && this.#token !== undefined && token !== undefined && !reauthenticated) {
        // The token may have rotated since it was read: read the file again, and retry if it changed.
        this.#token.refused(token);
        const fresh = await this.#token.current();
        if (fresh !== token) {
          res.resume();
          token = fresh;
          reauthenticated = true;
          continue;
        }
      }
      return res;
    }
  }

  async #send(req: KubeRequest, token: string | undefined, signal: AbortSignal): Promise<IncomingMessage> {
    const agent = await this.#pool();
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'vpcnetd' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = String(body.length);
    }
    const send = this.#https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const r = send(`${this.baseUrl}${req.path}`, { method: req.method, headers, agent, signal }, resolve);
      r.on('error', (err: NodeJS.ErrnoException) => {
        reject(
          r.reusedSocket && err.code === 'ECONNRESET' ? new StaleSocket(err.message, { cause: err }) : err,
        );
      });
      r.end(body);
    });
  }

  /** The connection pool, made on first use (reading the CA bundle, which a failure retries). */
  #pool(): Promise<HttpAgent> {
    this.#agent ??= this.#makePool().catch((err: unknown) => {
      this.#agent = undefined;
      throw err;
    });
    return this.#agent;
  }

  async #makePool(): Promise<HttpAgent> {
    // keepAliveMsecs is also the TCP keep-alive delay: a watch on a dead peer is noticed sooner.
    const options = {
      keepAlive: true,
      keepAliveMsecs: 30_000,
      maxFreeSockets: 4,
      scheduling: 'lifo' as const,
    };
    if (!this.#https) return new HttpAgent(options);
    if (this.#caFile === undefined) return new HttpsAgent(options);
    let ca: Buffer;
    try {
      ca = await this.#readCa(this.#caFile);
    } catch (err) {
      throw new Error(`cannot read the Kubernetes API's CA bundle ${this.#caFile}: ${errorText(err)}`, {
        cause: err,
      });
    }
    return new HttpsAgent({ ...options, ca });
  }
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.destroy();
      throw new Error(`answer larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
