// The server side of RFC 6455 WebSocket, as much as the Kubernetes API's streaming subresources
// need (pods/exec, pod-exec.ts): the opening handshake over node's `upgrade` event, binary
// messages, ping/pong and the closing handshake. Written here rather than taken from npm because
// it is this small and the emulator takes no runtime dependency. Clients mask every frame and the
// server none (RFC 6455 5.1); a frame that breaks that ends the connection with 1002.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** RFC 6455 1.3: appended to the client's key before hashing. */
const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const OPCODE = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** Close codes (RFC 6455 7.4.1) the emulator sends. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  tooBig: 1009,
} as const;

/** A message larger than this ends the connection (1009): stdin of an exec needs far less. */
export const MAX_MESSAGE_BYTES = 16 << 20;

/** How long a close waits for the peer's close frame before it ends the TCP connection anyway. */
const CLOSE_WAIT_MS = 2_000;

/** The handshake's Sec-WebSocket-Accept for a client's Sec-WebSocket-Key. */
export function acceptKey(key: string): string {
  return createHash('sha1').update(`${key}${HANDSHAKE_GUID}`).digest('base64');
}

/**
 * One frame. `mask` (4 bytes) masks the payload, as a client must; a server passes none. The
 * length takes 7 bits up to 125, else 16 bits (126) or 64 bits (127) after the first two bytes.
 */
export function encodeFrame(opcode: number, payload: Uint8Array, mask?: Uint8Array, fin = true): Buffer {
  const length = payload.length;
  const extra = length < 126 ? 0 : length < 0x10000 ? 2 : 8;
  const head = Buffer.alloc(2 + extra + (mask === undefined ? 0 : 4));
  head[0] = (fin ? 0x80 : 0) | (opcode & 0x0f);
  const maskBit = mask === undefined ? 0 : 0x80;
  if (extra === 0) head[1] = maskBit | length;
  else if (extra === 2) {
    head[1] = maskBit | 126;
    head.writeUInt16BE(length, 2);
  } else {
    head[1] = maskBit | 127;
    head.writeBigUInt64BE(BigInt(length), 2);
  }
  if (mask === undefined) return Buffer.concat([head, payload]);
  head.set(mask.subarray(0, 4), 2 + extra);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] = (body[i] ?? 0) ^ (mask[i & 3] ?? 0);
  return Buffer.concat([head, body]);
}

export interface Frame {
  readonly fin: boolean;
  readonly opcode: number;
  /** Unmasked. */
  readonly payload: Buffer;
}

/** A frame that breaks the protocol: the connection ends with `code`. */
export class WebSocketProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'WebSocketProtocolError';
  }
}

/**
 * Frames out of a byte stream cut anywhere (TCP gives no frame boundaries). `masked`: whether
 * frames must be masked (a server reading a client) or must not be (a client reading a server).
 */
export class FrameReader {
  #buffered: Buffer = Buffer.alloc(0);
  readonly #masked: boolean;

  constructor(masked: boolean) {
    this.#masked = masked;
  }

  /** The frames `chunk` completes; what is left waits for the next chunk. */
  push(chunk: Buffer): Frame[] {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    const frames: Frame[] = [];
    for (;;) {
      const frame = this.#next();
      if (frame === undefined) return frames;
      frames.push(frame);
    }
  }

  #next(): Frame | undefined {
    const b = this.#buffered;
    if (b.length < 2) return undefined;
    const first = b[0] ?? 0;
    const second = b[1] ?? 0;
    if ((first & 0x70) !== 0) throw new WebSocketProtocolError(CLOSE.protocolError, 'reserved bits set');
    const opcode = first & 0x0f;
    const fin = (first & 0x80) !== 0;
    const masked = (second & 0x80) !== 0;
    if (masked !== this.#masked)
      throw new WebSocketProtocolError(
        CLOSE.protocolError,
        this.#masked ? 'a client frame must be masked' : 'a server frame must not be masked',
      );
    let length = second & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (b.length < 4) return undefined;
      length = b.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (b.length < 10) return undefined;
      const long = b.readBigUInt64BE(2);
      if (long > BigInt(MAX_MESSAGE_BYTES))
        throw new WebSocketProtocolError(CLOSE.tooBig, `a frame of ${long} bytes is too big`);
      length = Number(long);
      offset = 10;
    }
    if (opcode >= 0x8 && (length > 125 || !fin))
      throw new WebSocketProtocolError(
        CLOSE.protocolError,
        'a control frame must be whole and at most 125 bytes',
      );
    if (length > MAX_MESSAGE_BYTES)
      throw new WebSocketProtocolError(CLOSE.tooBig, `a frame of ${length} bytes is too big`);
    const maskAt = offset;
    if (masked) offset += 4;
    if (b.length < offset + length) return undefined;
    const payload = Buffer.from(b.subarray(offset, offset + length));
    if (masked)
      for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] ?? 0) ^ (b[maskAt + (i & 3)] ?? 0);
    this.#buffered = b.subarray(offset + length);
    return { fin, opcode, payload };
  }
}

/** Why an upgrade request cannot become a WebSocket: the HTTP status to refuse it with. */
export class HandshakeRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HandshakeRefused';
  }
}

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v.join(',') : (v ?? '')).trim();
}

/** Is this upgrade request asking for a WebSocket at all (and not, say, SPDY/3.1)? */
export function wantsWebSocket(req: IncomingMessage): boolean {
  return header(req, 'upgrade')
    .split(',')
    .some((p) => p.trim().toLowerCase() === 'websocket');
}

/**
 * Checks a client's opening handshake and picks the subprotocol: the first of the client's, in
 * its order of preference, that `supported` names. Returns the 101 response to write.
 */
export function acceptHandshake(
  req: IncomingMessage,
  supported: readonly string[],
): { readonly response: string; readonly protocol: string } {
  if (req.method !== 'GET')
    throw new HandshakeRefused(400, `a WebSocket is opened with GET, not ${req.method}`);
  if (!wantsWebSocket(req)) throw new HandshakeRefused(400, 'the upgrade asked for is not websocket');
  if (header(req, 'sec-websocket-version') !== '13')
    throw new HandshakeRefused(426, 'only WebSocket version 13 is spoken here', {
      'Sec-WebSocket-Version': '13',
    });
  const key = header(req, 'sec-websocket-key');
  if (Buffer.from(key, 'base64').length !== 16)
    throw new HandshakeRefused(400, 'Sec-WebSocket-Key is missing or not 16 bytes in base64');
  const offered = header(req, 'sec-websocket-protocol')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const protocol = offered.find((p) => supported.includes(p));
  if (protocol === undefined)
    throw new HandshakeRefused(
      400,
      `none of the subprotocols offered (${offered.join(', ') || 'none'}) is spoken here: ${supported.join(', ')}`,
    );
  const response = [
    'HTTP/1.1 101 Switching Protocols',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Accept: ${acceptKey(key)}`,
    `Sec-WebSocket-Protocol: ${protocol}`,
    '',
    '',
  ].join('\r\n');
  return { response, protocol };
}

/** Answers an upgrade request with an ordinary HTTP response (JSON) and ends the connection. */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = `${JSON.stringify(body)}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ];
  socket.end(`${lines.join('\r\n')}${text}`);
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  426: 'Upgrade Required',
  500: 'Internal Server Error',
};

export interface WebSocketHandlers {
  /** A whole binary message (continuations joined). */
  onMessage(data: Buffer): void;
  /** The connection is gone (closed by either side, or broken): `code` as the close frame had it. */
  onClose(code: number): void;
}

/**
 * A server-side WebSocket on an upgraded socket (after the 101 was written): binary messages in
 * and out; pings are answered with pongs carrying the same data (client-go's heartbeat counts on
 * them to keep its read deadline); a text message or a protocol error ends it with 1003 or 1002.
 */
export class WebSocketSession {
  readonly #socket: Duplex;
  readonly #handlers: WebSocketHandlers;
  readonly #reader = new FrameReader(true);
  #fragments: Buffer[] = [];
  #closeSent = false;
  #closed = false;

  constructor(socket: Duplex, head: Buffer, handlers: WebSocketHandlers) {
    this.#socket = socket;
    this.#handlers = handlers;
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('close', () => this.#gone(CLOSE.goingAway));
    socket.on('error', () => socket.destroy());
    if (head.length > 0) this.#receive(head);
  }

  get open(): boolean {
    return !this.#closeSent && !this.#closed;
  }

  /** One binary message; false once the session is closing (the data is dropped). */
  send(data: Uint8Array): boolean {
    if (!this.open) return false;
    this.#socket.write(encodeFrame(OPCODE.binary, data));
    return true;
  }

  /** Starts the closing handshake: the peer's close frame (or a timeout) ends the TCP connection. */
  close(code: number = CLOSE.normal, reason = ''): void {
    if (this.#closeSent || this.#closed) return;
    this.#closeSent = true;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    this.#socket.write(encodeFrame(OPCODE.close, payload));
    setTimeout(() => this.#socket.destroy(), CLOSE_WAIT_MS).unref();
  }

  /** Ends the connection at once (the emulator is stopping). */
  destroy(): void {
    this.#socket.destroy();
  }

  #receive(chunk: Buffer): void {
    if (this.#closed) return;
    let frames: Frame[];
    try {
      frames = this.#reader.push(chunk);
    } catch (err) {
      const code = err instanceof WebSocketProtocolError ? err.code : CLOSE.protocolError;
      this.close(code, err instanceof Error ? err.message.slice(0, 100) : '');
      return;
    }
    for (const f of frames) this.#frame(f);
  }

  #frame(f: Frame): void {
    switch (f.opcode) {
      case OPCODE.ping:
        if (this.open) this.#socket.write(encodeFrame(OPCODE.pong, f.payload));
        return;
      case OPCODE.pong:
        return;
      case OPCODE.close: {
        const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : CLOSE.normal;
        // The answer to a close is a close (the first two bytes of its payload, RFC 6455 5.5.1);
        // after both, the server ends the TCP connection.
        if (!this.#closeSent) {
          this.#closeSent = true;
          this.#socket.write(encodeFrame(OPCODE.close, f.payload.subarray(0, 2)));
        }
        this.#socket.end();
        this.#gone(code);
        return;
      }
      case OPCODE.text:
        this.close(CLOSE.unsupportedData, 'binary messages only');
        return;
      case OPCODE.binary:
      case OPCODE.continuation: {
        const continues = f.opcode === OPCODE.continuation;
        const unfinished = this.#fragments.length > 0;
        if (continues !== unfinished) {
          this.close(CLOSE.protocolError, 'a continuation frame must follow an unfinished message');
          return;
        }
        this.#fragments.push(f.payload);
        if (!f.fin) return;
        const message = Buffer.concat(this.#fragments);
        this.#fragments = [];
        if (message.length > MAX_MESSAGE_BYTES) {
          this.close(CLOSE.tooBig, 'message too big');
          return;
        }
        if (!this.#closeSent) this.#handlers.onMessage(message);
        return;
      }
      default:
        this.close(CLOSE.protocolError, `unknown opcode ${f.opcode}`);
    }
  }

  #gone(code: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handlers.onClose(code);
  }
}
