// IMDSv2 client on node:http. Our own rather than @aws-sdk/ec2-metadata-service, which fetches a
// token per request and returns untyped errors: here the session token is cached until shortly
// before its TTL ends, a 401 (token expired or revoked early) re-fetches it once, and every
// failure is an ImdsError naming the path and the HTTP status.
import http from 'node:http';
import { errorText } from '../infra/error-text.ts';
import { CloudError } from './cloud.ts';

export const DEFAULT_IMDS_ENDPOINT = 'http://169.254.169.254';
const TOKEN_PATH = '/latest/api/token';
const META_DATA_PREFIX = '/latest/meta-data/';

export interface ImdsClientOptions {
  /** Base URL; default AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254. */
  readonly endpoint?: string;
  /** Requested token lifetime (IMDS accepts 1..21600). */
  readonly tokenTtlSeconds?: number;
  /** Timeout of one HTTP request, connect to last byte. */
  readonly timeoutMs?: number;
  /** Attempts per call for connection errors, timeouts, 429 and 5xx (1 = no retry). */
  readonly attempts?: number;
  /** First backoff delay; doubles per retry. */
  readonly backoffMs?: number;
  /** Clock (ms) used for token expiry; a test passes a fake one. */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The local address requests are sent from (default: the kernel's choice). An in-process fleet
   * gives each agent its own loopback address, by which the emulator's IMDS knows the instance.
   */
  readonly localAddress?: string;
}

/** An IMDS failure. `status` is the HTTP status, absent when no response arrived. */
export class ImdsError extends CloudError {
  constructor(
    message: string,
    readonly path: string,
    readonly status: number | undefined,
    retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, 'IMDS', retryable, options);
    this.name = 'ImdsError';
  }
}

interface HttpReply {
  readonly status: number;
  readonly statusText: string;
  readonly body: string;
}

interface CachedToken {
  readonly value: string;
  readonly refreshAt: number;
}

export function imdsEndpointFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.AWS_EC2_METADATA_SERVICE_ENDPOINT?.trim();
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_IMDS_ENDPOINT;
}

export class ImdsClient {
  readonly endpoint: URL;
  private readonly tokenTtlSeconds: number;
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly localAddress: string | undefined;
  private token: CachedToken | undefined;
  /** One token request in flight at a time; concurrent callers share it. */
  private tokenFetch: Promise<string> | undefined;

  constructor(options: ImdsClientOptions = {}) {
    this.endpoint = new URL(options.endpoint ?? imdsEndpointFromEnv());
    this.tokenTtlSeconds = options.tokenTtlSeconds ?? 21600;
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.attempts = Math.max(1, options.attempts ?? 3);
    this.backoffMs = options.backoffMs ?? 100;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.localAddress = options.localAddress;
    if (this.tokenTtlSeconds < 1 || this.tokenTtlSeconds > 21600) {
      throw new RangeError(`IMDS token TTL must be 1..21600 seconds, got ${this.tokenTtlSeconds}`);
    }
  }

  /** GET /latest/meta-data/<path>; returns the body as text. */
  async get(path: string): Promise<string> {
    const fullPath = META_DATA_PREFIX + path.replace(/^\/+/, '');
    let refetchedAfter401 = false;
    let attempt = 0;
    for (;;) {
      attempt++;
      let failure: ImdsError;
      try {
        const token = await this.sessionToken();
        const reply = await this.request('GET', fullPath, { 'x-aws-ec2-metadata-token': token });
        if (reply.status === 200) return reply.body;
        if (reply.status === 401 && !refetchedAfter401) {
          // The token expired or was revoked before we expected: fetch a new one, once.
          refetchedAfter401 = true;
          this.token = undefined;
          attempt--;
          continue;
        }
        failure = statusError('GET', fullPath, reply);
      } catch (err) {
        failure = err instanceof ImdsError ? err : connectionError('GET', fullPath, err);
      }
      if (!failure.retryable || attempt >= this.attempts) throw withAttempts(failure, attempt);
      await this.sleep(this.backoffMs * 2 ** (attempt - 1));
    }
  }

  /** GET of a list-valued path (one item per line), empty lines dropped. */
  async getLines(path: string): Promise<string[]> {
    const body = await this.get(path);
    return body
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
  }

  /**
   * A list path that IMDS leaves out where there is nothing to list (an ENI's `ipv4-prefix`,
   * `ipv6s`): its 404 is an empty list, any other failure an error.
   */
  async getLinesOrNone(path: string): Promise<string[]> {
    try {
      return await this.getLines(path);
    } catch (err) {
      if (err instanceof ImdsError && err.status === 404) return [];
      throw err;
    }
  }

  private sessionToken(): Promise<string> {
    const cached = this.token;
    if (cached !== undefined && this.now() < cached.refreshAt) return Promise.resolve(cached.value);
    if (this.tokenFetch === undefined) {
      this.tokenFetch = this.fetchToken().finally(() => {
        this.tokenFetch = undefined;
      });
    }
    return this.tokenFetch;
  }

  private async fetchToken(): Promise<string> {
    const requestedAt = this.now();
    const reply = await this.request('PUT', TOKEN_PATH, {
      'x-aws-ec2-metadata-token-ttl-seconds': String(this.tokenTtlSeconds),
    }).catch((err: unknown) => {
      throw connectionError('PUT', TOKEN_PATH, err);
    });
    if (reply.status !== 200) throw statusError('PUT', TOKEN_PATH, reply);
    const value = reply.body.trim();
    if (value === '') {
      throw new ImdsError(`IMDS PUT ${TOKEN_PATH} returned an empty token`, TOKEN_PATH, 200, true);
    }
    // Renew before the TTL ends (a tenth of it, at most a minute) so that a request sent
    // with the token does not race its expiry.
    const marginMs = Math.min(60_000, this.tokenTtlSeconds * 100);
    this.token = { value, refreshAt: requestedAt + this.tokenTtlSeconds * 1000 - marginMs };
    return value;
  }

  private request(method: string, path: string, headers: Record<string, string>): Promise<HttpReply> {
    return new Promise((resolve, reject) => {
      const url = new URL(path, this.endpoint);
      const req = http.request(url, {
        method,
        headers: { ...headers, 'content-length': '0' },
        ...(this.localAddress === undefined ? {} : { localAddress: this.localAddress }),
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', fail);
        res.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? '',
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
      });
      req.end();
    });
  }
}

function statusError(method: string, path: string, reply: HttpReply): ImdsError {
  // 429 is IMDS throttling; 5xx a transient service fault. 4xx otherwise are final
  // (404: no such path, 403: IMDS disabled, 400: bad token request).
  const retryable = reply.status === 429 || reply.status >= 500;
  const text = reply.statusText !== '' ? `${reply.status} ${reply.statusText}` : String(reply.status);
  return new ImdsError(`IMDS ${method} ${path} failed: ${text}`, path, reply.status, retryable);
}

function connectionError(method: string, path: string, err: unknown): ImdsError {
  const detail = errorText(err);
  return new ImdsError(`IMDS ${method} ${path} failed: ${detail}`, path, undefined, true, { cause: err });
}

function withAttempts(err: ImdsError, attempts: number): ImdsError {
  if (attempts <= 1) return err;
  return new ImdsError(`${err.message} (after ${attempts} attempts)`, err.path, err.status, err.retryable, {
    cause: err.cause ?? err,
  });
}
