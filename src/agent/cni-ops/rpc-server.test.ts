import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ForwardedRequest, type ForwardedResponse, MAX_REQUEST_BYTES } from '../../cni/wire.ts';
import { pieces, rawExchange, rawGet, rawPost } from '../testing/raw-rpc-client.ts';
import {
  DEFAULT_RPC_LIMITS,
  type RpcHandlers,
  type RpcLimits,
  startRpcServer,
  stopRpcServer,
} from './rpc-server.ts';

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
    assert.equal(seen.length, 1, 'refused bodies never reach the CNI handler');
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

/** A server on a temp socket for one test, stopped (and its dir removed) afterwards. */
async function withServer(
  limits: Partial<RpcLimits>,
  handlers: Partial<RpcHandlers>,
  body: (socket: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-rpc-'));
  const socket = join(dir, 'agent.sock');
  const server = await startRpcServer(
    socket,
    {
      cni: async () => ({ exitCode: 0, stdout: '{"served":true}' }),
      ready: () => true,
      introspect: () => ({}),
      ...handlers,
    },
    { ...DEFAULT_RPC_LIMITS, ...limits },
  );
  try {
    await body(socket);
  } finally {
    await stopRpcServer(server);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The CNI error inside a refusal: a ForwardedResponse the plugin prints as it is. */
function refusal(body: string): {
  exitCode: number;
  error: { cniVersion: string; code: number; msg: string };
} {
  const answer = JSON.parse(body) as ForwardedResponse;
  return { exitCode: answer.exitCode, error: JSON.parse(answer.stdout) };
}

const cniRequest = (stdin: string) => JSON.stringify({ env: { CNI_COMMAND: 'ADD' }, stdin });

test('a body over the limit is read to its end and refused with 413 as a permanent CNI error (code 7), then the connection closes', async () => {
  let calls = 0;
  await withServer(
    { maxBodyBytes: 4096 },
    {
      cni: async () => {
        calls++;
        return { exitCode: 0, stdout: '' };
      },
    },
    async (socket) => {
      // 1 MiB, far more than a socket buffer holds: the client can finish writing only if the
      // server keeps reading, and must then still get the answer.
      const big = cniRequest(`{"cniVersion":"0.4.0","pad":"${'x'.repeat(1 << 20)}"}`);
      const out = await rawExchange(socket, [rawPost('/v1/cni', big)], { timeoutMs: 20_000 });
      assert.equal(out.status, 413);
      assert.equal(out.writeFailed, false, 'the whole body could be written');
      assert.equal(out.closedByServer, true);
      const { exitCode, error } = refusal(out.body);
      assert.equal(exitCode, 1);
      assert.equal(error.code, 7);
      assert.match(error.msg, /larger than 4096 bytes/);
      // Exactly at the limit is still served.
      const fits = cniRequest('x'.repeat(4096 - cniRequest('').length));
      assert.equal(Buffer.byteLength(fits), 4096);
      const ok = await rawExchange(socket, [rawPost('/v1/cni', fits)], { timeoutMs: 20_000 });
      assert.equal(ok.status, 200);
      assert.equal(calls, 1);
    },
  );
});

test('malformed bodies are refused with 400 as CNI errors (code 6) naming the problem, in the stdin version when readable', async () => {
  await withServer({}, {}, async (socket) => {
    const cases: Array<[string, RegExp, string]> = [
      ['', /body is not JSON/, '1.0.0'],
      ['{"env":', /body is not JSON/, '1.0.0'],
      ['null', /body is not an object/, '1.0.0'],
      ['[1,2]', /stdin must be a string/, '1.0.0'],
      ['{"env":{}}', /stdin must be a string/, '1.0.0'],
      ['{"env":"x","stdin":"{\\"cniVersion\\":\\"0.3.1\\"}"}', /env must be an object/, '0.3.1'],
      [
        '{"env":{"CNI_COMMAND":["ADD"]},"stdin":"{\\"cniVersion\\":\\"0.4.0\\"}"}',
        /env.CNI_COMMAND must be a string/,
        '0.4.0',
      ],
      ['\u0000\u00ff\ud800', /body is not JSON/, '1.0.0'],
    ];
    for (const [body, problem, version] of cases) {
      const out = await rawExchange(socket, [rawPost('/v1/cni', body)], { timeoutMs: 10_000 });
      assert.equal(out.status, 400, JSON.stringify(body));
      const { exitCode, error } = refusal(out.body);
      assert.equal(exitCode, 1);
      assert.equal(error.code, 6);
      assert.equal(error.cniVersion, version);
      assert.match(`${error.msg}: ${(error as { details?: string }).details}`, problem);
    }
  });
});

test('a client sending one byte a second is cut off at the header or request timeout while others are served', async () => {
  const limits = { headersTimeoutMs: 3000, requestTimeoutMs: 4000, timeoutCheckMs: 250 };
  await withServer(limits, {}, async (socket) => {
    const request = rawPost('/v1/cni', cniRequest('{}'));
    const headEnd = request.indexOf('\r\n\r\n') + 4;
    // Slow in the head, and slow in the body after a head sent at once.
    const slowHead = rawExchange(socket, pieces(request, 1), { gapMs: 1000, timeoutMs: 30_000 });
    const slowBody = rawExchange(
      socket,
      [request.subarray(0, headEnd), ...pieces(request.subarray(headEnd), 1)],
      { gapMs: 1000, timeoutMs: 30_000 },
    );
    let slowDone = false;
    void Promise.all([slowHead, slowBody]).then(() => {
      slowDone = true;
    });
    const other = await rawExchange(socket, [rawPost('/v1/cni', cniRequest('{}'))], { timeoutMs: 10_000 });
    assert.equal(other.status, 200);
    assert.equal(slowDone, false, 'a good request was answered while the slow ones were still sending');
    for (const slow of await Promise.all([slowHead, slowBody])) {
      assert.equal(slow.closedByServer, true, 'the server, not the client, ended the slow connection');
      assert.equal(slow.status, 408);
    }
  });
});

test('200 concurrent connections each get an answer while the server keeps serving others', async () => {
  const limits = {
    maxBodyBytes: 64 * 1024,
    headersTimeoutMs: 3000,
    requestTimeoutMs: 4000,
    timeoutCheckMs: 250,
  };
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let inHandler = 0;
  await withServer(
    limits,
    {
      // Every well-formed request waits until the test has seen the server answer others.
      cni: async (req) => {
        inHandler++;
        await gate;
        return { exitCode: 0, stdout: `served ${req.env.CNI_CONTAINERID}` };
      },
    },
    async (socket) => {
      const kinds = ['good', 'malformed', 'oversized', 'silent'] as const;
      const clients = Array.from({ length: 200 }, (_, k) => {
        const kind = kinds[k % kinds.length]!;
        const parts =
          kind === 'good'
            ? [rawPost('/v1/cni', JSON.stringify({ env: { CNI_CONTAINERID: `c${k}` }, stdin: '{}' }))]
            : kind === 'malformed'
              ? [rawPost('/v1/cni', '{"env":{},"stdin":')]
              : kind === 'oversized'
                ? [rawPost('/v1/cni', cniRequest('y'.repeat(128 * 1024)))]
                : [];
        return { kind, k, exchange: rawExchange(socket, parts, { timeoutMs: 60_000 }) };
      });
      // All 50 good requests are inside the handler, holding their connections...
      const deadline = Date.now() + 30_000;
      while (inHandler < 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal(inHandler, 50);
      // ...and the server still answers a newcomer.
      const health = await rawExchange(socket, [rawGet('/v1/healthz')], { timeoutMs: 10_000 });
      assert.equal(health.status, 200);
      release();
      const expected = { good: 200, malformed: 400, oversized: 413, silent: 408 };
      for (const c of clients) {
        const out = await c.exchange;
        assert.equal(out.status, expected[c.kind], `client ${c.k} (${c.kind})`);
        assert.equal(out.closedByServer, true, `client ${c.k} (${c.kind})`);
        if (c.kind === 'good') assert.equal(JSON.parse(out.body).stdout, `served c${c.k}`);
        else if (c.kind !== 'silent')
          assert.equal(refusal(out.body).error.code, c.kind === 'oversized' ? 7 : 6, `client ${c.k}`);
      }
    },
  );
});

test('the agent reads requests up to the limit the plugin keeps: one constant, MAX_REQUEST_BYTES', () => {
  assert.equal(DEFAULT_RPC_LIMITS.maxBodyBytes, MAX_REQUEST_BYTES);
});
