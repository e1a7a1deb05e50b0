import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startLocalHttpServer } from '../testing/local-http-server.ts';
import { HttpTimeoutError, HttpTransport } from './http-transport.ts';

test('an answer that does not complete in time is a RequestTimeout HttpTimeoutError', async () => {
  const server = await startLocalHttpServer(() => ({ hang: true }));
  const transport = new HttpTransport({ requestTimeoutMs: 200 });
  try {
    const err = await transport.send('POST', new URL(server.url), {}, 'x').catch((e: unknown) => e);
    assert.ok(err instanceof HttpTimeoutError);
    assert.equal(err.code, 'RequestTimeout');
    assert.match(err.message, /got no complete answer within 200 ms/);
  } finally {
    transport.close();
    await server.close();
  }
});

test('a refused connection keeps its errno code', async () => {
  const server = await startLocalHttpServer(() => ({}));
  const url = new URL(server.url);
  await server.close();
  const transport = new HttpTransport();
  try {
    await assert.rejects(transport.send('GET', url, {}), { code: 'ECONNREFUSED' });
  } finally {
    transport.close();
  }
});

test('a URL that is neither http nor https is refused before anything is sent', async () => {
  const transport = new HttpTransport();
  await assert.rejects(transport.send('GET', new URL('ftp://127.0.0.1/'), {}), /unsupported URL scheme ftp:/);
});

test('status, body and Date header come back as sent, whatever the status', async () => {
  const server = await startLocalHttpServer((req) => ({ status: 418, body: `got ${req.body} é` }));
  const transport = new HttpTransport();
  try {
    const answer = await transport.send('POST', new URL(server.url), {}, 'ping');
    assert.deepEqual([answer.status, answer.body], [418, 'got ping é']);
    assert.ok(!Number.isNaN(Date.parse(answer.date ?? '')), 'the Date header comes along');
  } finally {
    transport.close();
    await server.close();
  }
});
