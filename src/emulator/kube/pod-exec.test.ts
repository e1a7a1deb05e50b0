// pods/{name}/exec of the emulated API, through the installed kubectl (WebSocket, v5) and through a
// frame-level client for what kubectl never sends. The commands run on this host (testing/
// host-runtime.ts); the lab's runtime, which maps DaemonSet pods to their nodes, has its own tests.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess } from '../../infra/process.ts';
import { hostRuntime } from '../testing/host-runtime.ts';
import { kubeconfigFor } from '../testing/kubeconfig.ts';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';
import { isRefused, openWebSocket, type TestWebSocket } from '../testing/websocket-client.ts';
import { CHANNEL } from './pod-exec.ts';
import { CLOSE, OPCODE } from './websocket.ts';

const node = process.execPath;

function execPath(pod: string, params: Record<string, string>, command: readonly string[]): string {
  const q = new URLSearchParams(params);
  for (const c of command) q.append('command', c);
  return `/api/v1/namespaces/default/pods/${pod}/exec?${q.toString()}`;
}

describe('pods/{name}/exec over WebSocket', () => {
  let t: TestEmulator;
  let dir: string;
  let kubeconfig: string;

  before(async () => {
    t = await startTestEmulator({ containerRuntime: hostRuntime });
    for (const [name, containers] of [
      ['web', ['app']],
      ['two', ['app', 'sidecar']],
    ] as const) {
      const created = await t.kube('POST', '/api/v1/namespaces/default/pods', {
        metadata: { name, namespace: 'default' },
        spec: { nodeName: 'node-a', containers: containers.map((c) => ({ name: c, image: 'x' })) },
        status: { phase: 'Running' },
      });
      assert.equal(created.status, 201);
    }
    dir = await mkdtemp(join(tmpdir(), 'pod-exec-'));
    kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeconfigFor(t.url));
  });
  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  const kubectl = (args: string[]) =>
    runProcess(['kubectl', '--kubeconfig', kubeconfig, ...args], {
      timeoutMs: 30_000,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    });

  test("kubectl exec: stdout and stderr apart, and kubectl exits with the command's exit code", async () => {
    const script = "process.stdout.write('to stdout'); process.stderr.write('to stderr'); process.exit(3)";
    const r = await kubectl(['exec', '-n', 'default', 'web', '-c', 'app', '--', node, '-e', script]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'to stdout');
    assert.match(r.stderr, /to stderr/);
    const line = t.logs.find((l) => l.msg === 'kube exec' && l.exitCode === 3);
    assert.equal(line?.protocol, 'v5.channel.k8s.io', 'kubectl ≥ 1.31 speaks v5 over WebSocket');
  });

  test('kubectl exec: a megabyte of output arrives whole and exit 0 is success', async () => {
    const r = await kubectl(['exec', 'web', '--', node, '-e', "process.stdout.write('x'.repeat(1 << 20))"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.length, 1 << 20);
    assert.ok(/^x+$/.test(r.stdout));
  });

  test('kubectl exec into a pod the API does not have: NotFound, as the API server says it', async () => {
    const r = await kubectl(['exec', 'nope', '--', 'true']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /NotFound.*pods "nope" not found/);
  });

  test('a container the pod does not have is refused with 400 before any upgrade', async () => {
    const ws = await openWebSocket(t.url, execPath('web', { container: 'other', stdout: 'true' }, ['true']), [
      'v5.channel.k8s.io',
    ]);
    assert.ok(isRefused(ws));
    assert.equal(ws.status, 400);
    const body = JSON.parse(ws.body) as { reason: string; message: string };
    assert.equal(body.reason, 'BadRequest');
    assert.equal(body.message, 'container other is not valid for pod web');
  });

  test('no container named: the only one, else 400 naming the choices', async () => {
    const ws = await openWebSocket(t.url, execPath('two', { stdout: 'true' }, ['true']), [
      'v5.channel.k8s.io',
    ]);
    assert.ok(isRefused(ws));
    assert.match(ws.body, /a container name must be specified for pod two, choose one of: \[app sidecar\]/);
  });

  test('an offer of neither v5 nor v4 is refused with 400 naming what is spoken', async () => {
    const ws = await openWebSocket(t.url, execPath('web', { stdout: 'true' }, ['true']), [
      'base64.channel.k8s.io',
    ]);
    assert.ok(isRefused(ws));
    assert.equal(ws.status, 400);
    assert.match(ws.body, /v5\.channel\.k8s\.io, v4\.channel\.k8s\.io/);
  });

  test("SPDY (kubectl's fallback) is refused after the same checks: 404 for a missing pod, else 400", async () => {
    const spdy = { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' };
    const missing = await openWebSocket(t.url, execPath('nope', { stdout: 'true' }, ['true']), [], spdy);
    assert.ok(isRefused(missing));
    assert.equal(missing.status, 404);
    const there = await openWebSocket(t.url, execPath('web', { stdout: 'true' }, ['true']), [], spdy);
    assert.ok(isRefused(there));
    assert.equal(there.status, 400);
    assert.match(there.body, /served over WebSocket only/);
  });

  test('exec without an upgrade is answered 400 "Upgrade request required"', async () => {
    const r = await t.kube('POST', execPath('web', { stdout: 'true' }, ['true']));
    assert.equal(r.status, 400);
    assert.equal((r.json as { message: string }).message, 'Upgrade request required');
  });

  test("stdin on channel 0 reaches the command, v5's close signal ends it, pings get pongs, then Status and close 1000", async () => {
    const ws = (await openWebSocket(
      t.url,
      execPath('web', { stdin: 'true', stdout: 'true', stderr: 'true' }, [
        node,
        '-e',
        'process.stdin.pipe(process.stdout)',
      ]),
      ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
    )) as TestWebSocket;
    assert.ok(!isRefused(ws));
    assert.equal(ws.protocol, 'v5.channel.k8s.io', "the client's first choice");
    ws.send(OPCODE.ping, Buffer.from('beat'));
    const pong = await ws.waitFor((f) => f.opcode === OPCODE.pong);
    assert.equal(pong.payload.toString(), 'beat');
    ws.send(OPCODE.binary, Buffer.concat([Buffer.of(CHANNEL.stdin), Buffer.from('hello ')]));
    ws.send(OPCODE.binary, Buffer.concat([Buffer.of(CHANNEL.stdin), Buffer.from('world')]));
    ws.send(OPCODE.binary, Buffer.of(CHANNEL.close, CHANNEL.stdin));
    const close = await ws.waitFor((f) => f.opcode === OPCODE.close);
    assert.equal(close.payload.readUInt16BE(0), CLOSE.normal);
    assert.equal(ws.channel(CHANNEL.stdout).toString(), 'hello world');
    assert.deepEqual(JSON.parse(ws.channel(CHANNEL.error).toString()), { metadata: {}, status: 'Success' });
    const statusAt = ws.frames.findIndex((f) => f.payload[0] === CHANNEL.error);
    assert.equal(statusAt, ws.frames.length - 2, 'the Status is the last message before the close');
    ws.send(OPCODE.close, close.payload);
    await ws.ended();
  });

  test("a failing command's Status: Failure, NonZeroExitCode, its code as the ExitCode cause", async () => {
    const ws = (await openWebSocket(
      t.url,
      execPath('web', { stdout: 'true' }, [node, '-e', 'process.exit(42)']),
      ['v4.channel.k8s.io'],
    )) as TestWebSocket;
    assert.equal(ws.protocol, 'v4.channel.k8s.io');
    await ws.waitFor((f) => f.opcode === OPCODE.close);
    const s = JSON.parse(ws.channel(CHANNEL.error).toString()) as Record<string, unknown>;
    assert.equal(s.status, 'Failure');
    assert.equal(s.reason, 'NonZeroExitCode');
    assert.deepEqual(s.details, { causes: [{ reason: 'ExitCode', message: '42' }] });
    ws.destroy();
  });

  test('an unmasked client frame ends the exec with 1002, and the command is stopped', async () => {
    const ws = (await openWebSocket(
      t.url,
      execPath('web', { stdin: 'true', stdout: 'true' }, [node, '-e', 'setTimeout(() => {}, 60000)']),
      ['v5.channel.k8s.io'],
    )) as TestWebSocket;
    ws.send(OPCODE.binary, Buffer.of(CHANNEL.stdin, 0x41), false);
    const close = await ws.waitFor((f) => f.opcode === OPCODE.close);
    assert.equal(close.payload.readUInt16BE(0), CLOSE.protocolError);
    ws.send(OPCODE.close, close.payload);
    await ws.ended();
    const deadline = Date.now() + 10_000;
    let stopped: Record<string, unknown> | undefined;
    while (stopped === undefined && Date.now() < deadline) {
      stopped = t.logs.find((l) => l.msg === 'kube exec' && l.exitCode === 128 + 15);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(stopped, 'the command ended by SIGTERM when its client went');
  });
});
