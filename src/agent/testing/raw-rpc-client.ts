// A raw client of the agent's socket for hostile-input tests: it writes exactly the bytes it is
// given, as slowly as told, and reports what came back and who closed the connection.
import { writeSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';

export interface RawExchange {
  /** The status of the first response, undefined when none came. */
  readonly status: number | undefined;
  /** The first response's body (the bytes after its head). */
  readonly body: string;
  /** The server closed the connection (as opposed to this client giving up at its timeout). */
  readonly closedByServer: boolean;
  /** A write failed because the server had closed already. */
  readonly writeFailed: boolean;
  readonly ms: number;
}

export interface RawExchangeOptions {
  /** Pause before each part after the first (a slow client). */
  readonly gapMs?: number;
  /** The client gives up (and closes) after this long. */
  readonly timeoutMs: number;
}

/** Sends `parts` on a fresh connection to `socketPath` and reads until either side closes. */
export function rawExchange(
  socketPath: string,
  parts: readonly (string | Buffer)[],
  opts: RawExchangeOptions,
): Promise<RawExchange> {
  const started = performance.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let writeFailed = false;
    let gaveUp = false;
    const socket = connect(socketPath);
    const timer = setTimeout(() => {
      gaveUp = true;
      socket.destroy();
    }, opts.timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {
      writeFailed = true;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1];
      const headEnd = text.indexOf('\r\n\r\n');
      resolve({
        status: status === undefined ? undefined : Number(status),
        body: headEnd < 0 ? '' : text.slice(headEnd + 4),
        closedByServer: !gaveUp,
        writeFailed,
        ms: performance.now() - started,
      });
    });
    void (async () => {
      for (const [k, part] of parts.entries()) {
        if (k === 0) {
          socket.write(part);
          continue;
        }
        if (opts.gapMs !== undefined) await sleep(opts.gapMs);
        if (!(await writeLater(socket, part))) {
          writeFailed = true;
          return;
        }
      }
    })();
  });
}

/**
 * Writes a later part of a slow client; false when the server has closed the connection. It
 * writes to the descriptor, not through socket.write: a socket.write that fails because the server
 * answered and closed in the meantime (EPIPE) makes Node destroy the socket at once, dropping the
 * answer still unread in the kernel's buffer, and the test would see no status at all. A failed
 * write(2) leaves the reading side alone, so the answer and the close still arrive.
 */
async function writeLater(socket: Socket, part: string | Buffer): Promise<boolean> {
  await nextTurn(); // lets a close that came in during the pause be read first
  // What socket.write still queues goes first (a large first part).
  while (socket.writableLength > 0 && !socket.destroyed) await sleep(5);
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (socket.destroyed || socket.writableEnded || fd === undefined || fd < 0) return false;
  let rest = typeof part === 'string' ? Buffer.from(part) : part;
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return false;
      await nextTurn();
    }
  }
  return true;
}

/** The bytes of a POST of `body` to `path`, asking the server to close after answering. */
export function rawPost(path: string, body: string | Buffer): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const head =
    `POST ${path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n` +
    `content-length: ${payload.length}\r\nconnection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), payload]);
}

/** A GET to `path`, asking the server to close after answering. */
export function rawGet(path: string): Buffer {
  return Buffer.from(`GET ${path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n`);
}

/** Splits bytes into parts of `size` (for a client that trickles). */
export function pieces(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size));
  return out;
}
