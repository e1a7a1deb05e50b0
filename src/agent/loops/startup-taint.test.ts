// The startup taint goes once the agent serves and its pool has a free address; API errors are
// retried with backoff and logged once; the removal is reported on the node.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonLogger } from '../../infra/log.ts';
import type { AgentEvent, EventRecorder } from '../../pods/kube-events.ts';
import type { NodeTaints } from '../../pods/node-taints.ts';
import { until } from '../testing/agent-world.ts';
import { StartupTaint } from './startup-taint.ts';

const KEY = 'node.vpcnet.io/agent-not-ready';

function recorder(): EventRecorder & { got: AgentEvent[] } {
  const got: AgentEvent[] = [];
  return {
    got,
    emit: (e) => got.push(e),
    figures: () => ({ sent: got.length, failed: 0, dropped: 0, queued: 0 }),
    stop: async () => undefined,
  };
}

function logLines() {
  const lines: { level: string; msg: string }[] = [];
  return {
    lines,
    log: jsonLogger('info', (l) => lines.push(JSON.parse(l) as { level: string; msg: string })),
  };
}

test('without a free address the taint stays; once the pool has one it is removed, logged once and reported on the node', async () => {
  let free = false;
  const calls: string[] = [];
  const taints: Pick<NodeTaints, 'remove'> = {
    remove: async (key) => {
      calls.push(key);
      return 'removed';
    },
  };
  const events = recorder();
  const { lines, log } = logLines();
  const loop = new StartupTaint({
    taints,
    key: KEY,
    nodeName: 'node-a',
    hasFreeAddress: () => free,
    events,
    log,
    pollMs: 10,
  });
  loop.start();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(calls, [], 'removed before the pool had an address');
  assert.equal(loop.state, 'waitingForAddresses');
  free = true;
  await until(() => loop.state === 'removed', 5000);
  assert.deepEqual(calls, [KEY]);
  assert.deepEqual(
    lines.map((l) => l.msg),
    [
      'startup taint: waiting for a free address before removing it',
      'startup taint removed: the node takes pods',
    ],
  );
  assert.deepEqual(
    events.got.map((e) => [e.involved.kind, e.involved.name, e.reason]),
    [['Node', 'node-a', 'StartupTaintRemoved']],
  );
  await loop.stop();
});

test('API errors are retried with growing waits and logged once; the removal then succeeds', async () => {
  const at: number[] = [];
  const taints: Pick<NodeTaints, 'remove'> = {
    remove: async () => {
      at.push(performance.now());
      if (at.length < 4) throw new Error('GET /api/v1/nodes/node-a: 503 ServiceUnavailable');
      return 'removed';
    },
  };
  const { lines, log } = logLines();
  const loop = new StartupTaint({
    taints,
    key: KEY,
    nodeName: 'node-a',
    hasFreeAddress: () => true,
    log,
    retryMs: 20,
  });
  loop.start();
  await until(() => loop.state === 'removed', 10_000);
  assert.equal(at.length, 4);
  const gaps = at.slice(1).map((t, i) => t - (at[i] ?? 0));
  assert.ok((gaps[0] ?? 0) >= 15 && (gaps[2] ?? 0) >= 70, `waits do not grow: ${gaps.join(', ')}`);
  assert.equal(lines.filter((l) => l.level === 'warn').length, 1, 'every retry was logged');
  await loop.stop();
});

test('a node without the taint: nothing is reported; stop while waiting ends the loop at once', async () => {
  const events = recorder();
  const { log } = logLines();
  const absent = new StartupTaint({
    taints: { remove: async () => 'absent' },
    key: KEY,
    nodeName: 'node-a',
    hasFreeAddress: () => true,
    events,
    log,
  });
  absent.start();
  await until(() => absent.state === 'absent', 5000);
  assert.equal(absent.state, 'absent');
  assert.deepEqual(events.got, []);

  const waiting = new StartupTaint({
    taints: { remove: async () => assert.fail('removed without an address') },
    key: KEY,
    nodeName: 'node-a',
    hasFreeAddress: () => false,
    log,
    pollMs: 60_000,
  });
  waiting.start();
  const started = performance.now();
  await waiting.stop();
  assert.ok(performance.now() - started < 5000, 'stop waited for the poll interval');
  assert.equal(waiting.state, 'stopped');
});
