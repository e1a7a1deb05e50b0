// Kubernetes Events the agent reports: created in the API (the emulator's slice lists them), and
// best effort: a slow or failing API never blocks emit(), the queue stays bounded, drops are counted.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { jsonLogger } from '../infra/log.ts';
import { KubeClient } from './kube-client.ts';
import { type AgentEvent, EVENT_COMPONENT, kubeEvents, QueuedEvents } from './kube-events.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(() => emu.close());

const podEvent: AgentEvent = {
  involved: { kind: 'Pod', namespace: 'shop', name: 'web-0', uid: 'uid-web-0' },
  type: 'Normal',
  reason: 'StaleDeleteKeptNetwork',
  message: 'kept',
};

type EventList = { items: Record<string, unknown>[] };

test('events on a pod and on the node are created in the API, in their namespaces, naming the agent and the node', async () => {
  const logs: string[] = [];
  const events = kubeEvents(
    { baseUrl: emu.url },
    'node-a',
    jsonLogger('debug', (l) => logs.push(l)),
  );
  events.emit(podEvent);
  events.emit({
    involved: { kind: 'Node', name: 'node-a', uid: 'node-a' },
    type: 'Normal',
    reason: 'StartupTaintRemoved',
    message: 'removed',
  });
  const client = new KubeClient({ baseUrl: emu.url });
  for (let i = 0; i < 100 && events.figures().sent < 2; i++) await sleep(20);
  assert.deepEqual(events.figures(), { sent: 2, failed: 0, dropped: 0, queued: 0 }, logs.join(''));
  const inShop = (await client.request('GET', '/api/v1/namespaces/shop/events')) as EventList;
  assert.equal(inShop.items.length, 1);
  const e = inShop.items[0] as Record<string, unknown> & { metadata: { name: string; namespace: string } };
  assert.equal(e.metadata.namespace, 'shop');
  assert.match(e.metadata.name, /^web-0\.[0-9a-f]{16}$/);
  assert.deepEqual(e.involvedObject, {
    apiVersion: 'v1',
    kind: 'Pod',
    name: 'web-0',
    namespace: 'shop',
    uid: 'uid-web-0',
  });
  assert.equal(e.reason, 'StaleDeleteKeptNetwork');
  assert.deepEqual(e.source, { component: EVENT_COMPONENT, host: 'node-a' });
  const all = (await client.request('GET', '/api/v1/events')) as EventList;
  const nodeEvent = all.items.find((x) => x.reason === 'StartupTaintRemoved') as
    | { metadata: { namespace: string }; involvedObject: { kind: string; name: string } }
    | undefined;
  assert.equal(nodeEvent?.metadata.namespace, 'default');
  assert.deepEqual([nodeEvent?.involvedObject.kind, nodeEvent?.involvedObject.name], ['Node', 'node-a']);
  await events.stop();
});

test('with the API hanging, emit() returns at once, the queue holds at most its capacity and the rest is dropped and counted', async () => {
  let release: () => void = () => undefined;
  const hung = new Promise<void>((r) => {
    release = r;
  });
  let posts = 0;
  const lines: string[] = [];
  const events = new QueuedEvents({
    capacity: 3,
    log: jsonLogger('warn', (l) => lines.push(l)),
    post: async () => {
      posts++;
      await hung;
    },
  });
  const started = performance.now();
  for (let i = 0; i < 10; i++) events.emit(podEvent);
  assert.ok(performance.now() - started < 1000, 'emit waited on the API');
  await sleep(10);
  // One is being posted, three wait, six were dropped.
  assert.deepEqual(events.figures(), { sent: 0, failed: 0, dropped: 6, queued: 3 });
  assert.equal(lines.length, 1, 'drops are logged once, not per event');
  release();
  await sleep(20);
  assert.deepEqual(events.figures(), { sent: 4, failed: 0, dropped: 6, queued: 0 });
  assert.equal(posts, 4);
});

test('a failing API counts failures, logs the first only, and keeps sending what comes next', async () => {
  const lines: string[] = [];
  let fail = true;
  const events = new QueuedEvents({
    log: jsonLogger('warn', (l) => lines.push(l)),
    post: async () => {
      if (fail) throw new Error('403 Forbidden: events is forbidden');
    },
  });
  events.emit(podEvent);
  events.emit(podEvent);
  await sleep(20);
  assert.deepEqual(events.figures(), { sent: 0, failed: 2, dropped: 0, queued: 0 });
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /Forbidden/);
  fail = false;
  events.emit(podEvent);
  await sleep(20);
  assert.equal(events.figures().sent, 1);
});

test('stop waits for the post under way only; what is still queued is dropped and counted', async () => {
  let release: () => void = () => undefined;
  const events = new QueuedEvents({
    log: jsonLogger('error', () => undefined),
    post: () =>
      new Promise<void>((r) => {
        release = r;
      }),
  });
  events.emit(podEvent);
  events.emit(podEvent);
  events.emit(podEvent);
  await sleep(10);
  let stopped = false;
  const stop = events.stop().then(() => {
    stopped = true;
  });
  await sleep(10);
  assert.equal(stopped, false, 'stop did not wait for the post under way');
  release();
  await stop;
  assert.deepEqual(events.figures(), { sent: 1, failed: 0, dropped: 2, queued: 0 });
  events.emit(podEvent);
  assert.equal(events.figures().dropped, 3, 'an event after the stop is dropped');
});
