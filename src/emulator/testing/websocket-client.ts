// Test support: a WebSocket client at the frame level, for what kubectl never sends (a subprotocol
// it does not speak, an unmasked frame, a ping at a chosen moment) and to read every frame the
// server sends as it sent it. Frames out are masked with a random key, as RFC 6455 asks of clients.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Duplex } from 'node:stream';
import { encodeFrame, type Frame, FrameReader, OPCODE } from '../kube/websocket.ts';

/** An upgrade the server refused: its status and body. */
export interface Refused {
  readonly refused: true;
  readonly status: number;
  readonly body: string;
}

export class TestWebSocket {
  readonly frames: Frame[] = [];
  readonly #socket: Duplex;
  readonly #reader = new FrameReader(false);
  readonly #ended: Promise<void>;
  #waiters: (() => void)[] = [];

  constructor(
    socket: Duplex,
    head: Buffer,
    readonly protocol: string,
    readonly acceptHeader: string,
  ) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    this.#ended = new Promise((resolve) => socket.once('close', () => resolve()));
    if (head.length > 0) this.#receive(head);
  }

  /** A masked frame (unmasked with `masked: false`, which a server must refuse). */
  send(opcode: number, payload: Uint8Array, masked = true): void {
    this.#socket.write(encodeFrame(opcode, payload, masked ? randomBytes(4) : undefined));
  }

  /** Raw bytes, for frames cut across writes. */
  write(bytes: Uint8Array): void {
    this.#socket.write(bytes);
  }

  /** Resolves once a frame matching `match` has arrived (or rejects after `timeoutMs`). */
  async waitFor(match: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no such frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Resolves when the server has closed the TCP connection. */
  ended(): Promise<void> {
    return this.#ended;
  }

  destroy(): void {
    this.#socket.destroy();
  }

  /** The bytes of every binary message on `channel`, the channel byte taken off. */
  channel(channel: number): Buffer {
    return Buffer.concat(
      this.frames
        .filter((f) => f.opcode === OPCODE.binary && f.payload[0] === channel)
        .map((f) => f.payload.subarray(1)),
    );
  }

  #receive(chunk: Buffer): void {
    this.frames.push(...this.#reader.push(chunk));
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

/** Opens `path` of the server at `baseUrl` as a WebSocket offering `protocols`, or says why not. */
export function openWebSocket(
  baseUrl: string,
  path: string,
  protocols: readonly string[],
  headers: Readonly<Record<string, string>> = {},
): Promise<TestWebSocket | Refused> {
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, {
      method: 'GET',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': key,
        ...(protocols.length === 0 ? {} : { 'Sec-WebSocket-Protocol': protocols.join(', ') }),
        ...headers,
      },
    });
    req.on('upgrade', (res, socket, head) => {
      const protocol = String(res.headers['sec-websocket-protocol'] ?? '');
      resolve(new TestWebSocket(socket, head, protocol, String(res.headers['sec-websocket-accept'] ?? '')));
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ refused: true, status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

export function isRefused(x: TestWebSocket | Refused): x is Refused {
  return 'refused' in x;
}
