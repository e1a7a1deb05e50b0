import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { acceptKey, encodeFrame, FrameReader, OPCODE, WebSocketProtocolError } from './websocket.ts';

const MASK = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);

describe('WebSocket framing (RFC 6455)', () => {
  test('the handshake answer is the RFC example: dGhlIHNhbXBsZSBub25jZQ== gives s3pPLMBiTxaQ9kYGzzhZRbK+xOo=', () => {
    assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });

  test('a masked "Hello" is the RFC example frame, and a server frame carries no mask', () => {
    assert.deepEqual(
      encodeFrame(OPCODE.text, Buffer.from('Hello'), MASK),
      Buffer.from([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]),
    );
    assert.deepEqual(
      encodeFrame(OPCODE.text, Buffer.from('Hello')),
      Buffer.from([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]),
    );
  });

  test('lengths take 7 bits to 125, 16 bits to 65535, then 64 bits', () => {
    const headerOf = (n: number) => encodeFrame(OPCODE.binary, Buffer.alloc(n)).length - n;
    assert.deepEqual([125, 126, 65_535, 65_536].map(headerOf), [2, 4, 4, 10]);
    const long = encodeFrame(OPCODE.binary, Buffer.alloc(65_536));
    assert.equal(long[1], 127);
    assert.equal(long.readBigUInt64BE(2), 65_536n);
  });

  test('frames cut anywhere, byte by byte, are read whole and unmasked', () => {
    const payloads = [Buffer.from('a'), Buffer.alloc(300, 7), Buffer.alloc(70_000, 9), Buffer.alloc(0)];
    const wire = Buffer.concat(payloads.map((p) => encodeFrame(OPCODE.binary, p, MASK)));
    const reader = new FrameReader(true);
    const frames = [];
    for (const byte of wire) frames.push(...reader.push(Buffer.of(byte)));
    assert.deepEqual(
      frames.map((f) => f.payload),
      payloads,
    );
    assert.ok(frames.every((f) => f.fin && f.opcode === OPCODE.binary));
    const all = new FrameReader(true).push(wire);
    assert.equal(all.length, 4, 'several frames in one chunk');
  });

  test('a server refuses an unmasked client frame, a client a masked server frame (1002)', () => {
    assert.throws(
      () => new FrameReader(true).push(encodeFrame(OPCODE.binary, Buffer.from('x'))),
      (e: unknown) =>
        e instanceof WebSocketProtocolError && e.code === 1002 && /must be masked/.test(e.message),
    );
    assert.throws(
      () => new FrameReader(false).push(encodeFrame(OPCODE.binary, Buffer.from('x'), MASK)),
      (e: unknown) => e instanceof WebSocketProtocolError && e.code === 1002,
    );
  });

  test('a control frame above 125 bytes or fragmented is a protocol error', () => {
    assert.throws(
      () => new FrameReader(true).push(encodeFrame(OPCODE.ping, Buffer.alloc(126), MASK)),
      (e: unknown) => e instanceof WebSocketProtocolError && e.code === 1002,
    );
    assert.throws(
      () => new FrameReader(true).push(encodeFrame(OPCODE.ping, Buffer.alloc(1), MASK, false)),
      (e: unknown) => e instanceof WebSocketProtocolError && e.code === 1002,
    );
  });

  test('a frame longer than the message limit is refused from its header (1009), before its bytes', () => {
    const head = Buffer.alloc(14);
    head[0] = 0x82;
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(1n << 40n, 2);
    assert.throws(
      () => new FrameReader(true).push(head),
      (e: unknown) => e instanceof WebSocketProtocolError && e.code === 1009,
    );
  });
});
