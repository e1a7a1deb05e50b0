// The raw client's own guarantee, which the hostile-socket tests rely on: a slow client whose
// server answered and closed between two of its writes still reports the answer.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pieces, rawExchange } from './raw-rpc-client.ts';

test('a trickling client reads the answer of a server that closed before its next write', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-raw-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'sock');
  const server = createServer((socket) => {
    socket.once('data', () => {
      socket.end('HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n\r\n');
      socket.once('finish', () => {
        socket.destroy();
        // Keep the loop busy past the client's next write: that write then comes before the
        // client has read the answer, which is the order that lost it.
        const until = Date.now() + 300;
        while (Date.now() < until) {}
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.after(() => server.close());
  const out = await rawExchange(path, pieces(Buffer.from('POST / HTTP/1.1\r\n'), 1), {
    gapMs: 100,
    timeoutMs: 5000,
  });
  assert.equal(out.closedByServer, true);
  assert.equal(out.status, 408);
});
