// One HTTP(S) request, one attempt, over node:http(s) with keep-alive agents: the EC2 client
// sends every call over a few long-lived connections instead of a TLS handshake per call.
// Retries are not made here (LimitedCloud makes them, each under the agent's rate limit).
import http from 'node:http';
import https from 'node:https';

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
  /** The answer's Date header, when it has one (the server's clock). */
  readonly date?: string;
}

export interface HttpTransportOptions {
  /** Time to establish a new connection (TCP and TLS), ms. */
  readonly connectTimeoutMs?: number;
  /** Time from sending the request to the last byte of the answer, ms. */
  readonly requestTimeoutMs?: number;
  /** Connections per host at most; further requests queue. */
  readonly maxSockets?: number;
}

/** A request that timed out; `code` tells which phase (Node's own socket errors keep theirs). */
export class HttpTimeoutError extends Error {
  constructor(
    message: string,
    readonly code: 'ETIMEDOUT' | 'RequestTimeout',
  ) {
    super(message);
    this.name = 'HttpTimeoutError';
  }
}

/** Larger answers are cut off: no EC2 page the agent asks for comes near it. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export class HttpTransport {
  private readonly connectTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(options: HttpTransportOptions = {}) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 16 };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
  }

  send(
    method: string,
    url: URL,
    headers: Readonly<Record<string, string>>,
    body: string = '',
  ): Promise<HttpAnswer> {
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') {
      return Promise.reject(new Error(`unsupported URL scheme ${url.protocol} in ${url.origin}`));
    }
    const payload = Buffer.from(body, 'utf8');
    return new Promise((resolve, reject) => {
      const options = {
        method,
        headers: { ...headers, 'content-length': String(payload.length) },
        agent: secure ? this.httpsAgent : this.httpAgent,
      };
      const req = secure ? https.request(url, options) : http.request(url, options);
      let connectTimer: NodeJS.Timeout | undefined;
      const settle = () => {
        clearTimeout(requestTimer);
        if (connectTimer !== undefined) clearTimeout(connectTimer);
      };
      // The first failure wins: a timeout rejects with itself, not with the abort it causes.
      const fail = (err: Error) => {
        settle();
        reject(err);
        req.destroy();
      };
      const requestTimer = setTimeout(() => {
        fail(
          new HttpTimeoutError(
            `${method} ${url.origin} got no complete answer within ${this.requestTimeoutMs} ms`,
            'RequestTimeout',
          ),
        );
      }, this.requestTimeoutMs);
      req.on('socket', (socket) => {
        // A kept-alive socket is already connected; only a new one can hang in connect.
        if (!socket.connecting) return;
        connectTimer = setTimeout(() => {
          fail(
            new HttpTimeoutError(
              `cannot connect to ${url.host} within ${this.connectTimeoutMs} ms`,
              'ETIMEDOUT',
            ),
          );
        }, this.connectTimeoutMs);
        socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
      });
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            fail(new Error(`${method} ${url.origin}: answer larger than ${MAX_ANSWER_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', fail);
        res.on('end', () => {
          settle();
          const body = Buffer.concat(chunks).toString('utf8');
          const date = res.headers.date;
          resolve({ status: res.statusCode ?? 0, body, ...(date === undefined ? {} : { date }) });
        });
      });
      req.end(payload);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
