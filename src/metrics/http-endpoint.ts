// A small read-only HTTP endpoint of the agent (metrics, introspection): listens, says clearly
// which setting to change when its port is taken, and closes with the agent.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpEndpoint {
  /** Where it listens (the port the kernel chose when asked for 0). */
  readonly address: AddressInfo;
  close(): Promise<void>;
}

export interface EndpointSpec {
  /** What it serves, for the error message ("Prometheus metrics"). */
  readonly what: string;
  /** The setting that chose the address, named when it cannot be used. */
  readonly setting: string;
  /** undefined: every address of the network namespace. */
  readonly host: string | undefined;
  readonly port: number;
  readonly handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

export function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendText(res, status, 'application/json', `${JSON.stringify(body)}\n`);
}

/** 405 for anything but GET (HEAD included: these endpoints are read with curl and Prometheus). */
export function refuseUnlessGet(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET') return false;
  res.setHeader('allow', 'GET');
  sendJson(res, 405, { error: `method ${req.method} not allowed: this endpoint is read-only (GET)` });
  return true;
}

export async function startHttpEndpoint(spec: EndpointSpec): Promise<HttpEndpoint> {
  const server: Server = createServer((req, res) => {
    spec.handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  });
  const where = `${spec.host ?? '*'}:${spec.port}`;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'the port is already in use'
          : err.code === 'EADDRNOTAVAIL'
            ? 'the address is not one of this network namespace'
            : err.message;
      reject(
        new Error(`cannot serve ${spec.what} on ${where}: ${why} (set ${spec.setting})`, { cause: err }),
      );
    });
    server.listen(spec.port, spec.host, () => resolve());
  });
  server.removeAllListeners('error');
  // A failing connection must not take the agent down.
  server.on('error', () => {});
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
