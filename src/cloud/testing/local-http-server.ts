// A throwaway HTTP server on 127.0.0.1 for tests that play STS, a container credentials endpoint
// or IMDS: `answer` decides each reply; every request is recorded with its headers and body.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export interface CannedAnswer {
  readonly status?: number;
  readonly body?: string;
  /** Never answer (to test timeouts). */
  readonly hang?: boolean;
  /** The Date header (default: this machine's time). */
  readonly date?: string;
}

export interface LocalHttpServer {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Connections accepted so far (keep-alive reuses them). */
  connections(): number;
  close(): Promise<void>;
}

export async function startLocalHttpServer(
  answer: (request: RecordedRequest) => CannedAnswer,
): Promise<LocalHttpServer> {
  const requests: RecordedRequest[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      const reply = answer(request);
      if (reply.hang === true) return;
      res.writeHead(reply.status ?? 200, {
        'content-type': 'text/plain',
        ...(reply.date === undefined ? {} : { date: reply.date }),
      });
      res.end(reply.body ?? '');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
