import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ForwardedRequest } from '../cni/wire.ts';
import { startRpcServer, stopRpcServer } from './rpc-server.ts';

function call(
  socketPath: string,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the socket is created 0600, serves CNI requests and health, refuses bad bodies', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-rpc-'));
  const socket = join(dir, 'sub', 'agent.sock');
  const seen: ForwardedRequest[] = [];
  let ready = false;
  const server = await startRpcServer(socket, {
    cni: async (req) => {
      seen.push(req);
      return { exitCode: 0, stdout: '{"ok":true}' };
    },
    ready: () => ready,
    introspect: () => ({ attachments: [] }),
  });
  try {
    assert.equal((await stat(socket)).mode & 0o777, 0o600);
    assert.equal((await call(socket, 'GET', '/v1/healthz')).status, 503);
    ready = true;
    assert.equal((await call(socket, 'GET', '/v1/healthz')).status, 200);
    const ok = await call(
      socket,
      'POST',
      '/v1/cni',
      JSON.stringify({ env: { CNI_COMMAND: 'ADD' }, stdin: '{}' }),
    );
    assert.deepEqual(JSON.parse(ok.body), { exitCode: 0, stdout: '{"ok":true}' });
    assert.deepEqual(seen, [{ env: { CNI_COMMAND: 'ADD' }, stdin: '{}' }]);
    assert.equal((await call(socket, 'POST', '/v1/cni', 'not json')).status, 400);
    assert.equal(
      (await call(socket, 'POST', '/v1/cni', JSON.stringify({ env: { A: 1 }, stdin: '' }))).status,
      400,
    );
    assert.equal((await call(socket, 'GET', '/nope')).status, 404);
    assert.deepEqual(JSON.parse((await call(socket, 'GET', '/v1/state')).body), { attachments: [] });
  } finally {
    await stopRpcServer(server);
    await rm(dir, { recursive: true, force: true });
  }
});

test('a stale socket file from a crashed agent is replaced', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-rpc-'));
  const socket = join(dir, 'agent.sock');
  const handlers = {
    cni: async () => ({ exitCode: 0, stdout: '' }),
    ready: () => true,
    introspect: () => ({}),
  };
  // A crashed agent: a process that listened on the socket and was killed, leaving the file.
  const crashed = spawn(process.execPath, [
    '-e',
    `require('node:net').createServer().listen(${JSON.stringify(socket)}, () => process.kill(process.pid, 'SIGKILL'))`,
  ]);
  await new Promise((resolve) => crashed.once('exit', resolve));
  assert.ok((await stat(socket)).isSocket(), 'the crash left its socket file behind');
  const second = await startRpcServer(socket, handlers);
  try {
    assert.equal((await call(socket, 'GET', '/v1/healthz')).status, 200);
  } finally {
    await stopRpcServer(second);
    await rm(dir, { recursive: true, force: true });
  }
});
