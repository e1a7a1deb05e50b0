import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import {
  kubePodIpWriter,
  POD_IPS_ANNOTATION,
  type PodIpWrite,
  QueuedPodIpAnnotations,
} from './pod-ip-annotation.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

const quiet = { warn: () => {} };

async function createPod(namespace: string, name: string, annotations: Record<string, string> = {}) {
  const res = await fetch(`${t.url}/api/v1/namespaces/${namespace}/pods`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name, namespace, annotations }, spec: { nodeName: 'n1' } }),
  });
  assert.equal(res.status, 201);
}

async function annotationOf(namespace: string, name: string): Promise<string | undefined> {
  const res = await fetch(`${t.url}/api/v1/namespaces/${namespace}/pods/${name}`);
  const pod = (await res.json()) as { metadata: { annotations?: Record<string, string> } };
  return pod.metadata.annotations?.[POD_IPS_ANNOTATION];
}

test("the writer sets the pod's address and keeps its other annotations; clearing empties it only while it names that address", async () => {
  await createPod('default', 'web-1', { 'team.example/owner': 'net' });
  const write = kubePodIpWriter({ baseUrl: t.url });
  const pod = { namespace: 'default', name: 'web-1' };
  await write({ kind: 'set', pod, ip: '10.0.1.5' });
  assert.equal(await annotationOf('default', 'web-1'), '10.0.1.5');
  // A later sandbox of the pod got another address: a late clear of the old one leaves it.
  await write({ kind: 'set', pod, ip: '10.0.1.9' });
  await write({ kind: 'clear', pod, ip: '10.0.1.5' });
  assert.equal(await annotationOf('default', 'web-1'), '10.0.1.9');
  await write({ kind: 'clear', pod, ip: '10.0.1.9' });
  assert.equal(await annotationOf('default', 'web-1'), '', 'emptied, as upstream, the key kept');
  const res = await fetch(`${t.url}/api/v1/namespaces/default/pods/web-1`);
  const got = (await res.json()) as { metadata: { annotations: Record<string, string> } };
  assert.equal(got.metadata.annotations['team.example/owner'], 'net');
});

test('clearing a pod that is gone, or never annotated, is no failure', async () => {
  const write = kubePodIpWriter({ baseUrl: t.url });
  await write({ kind: 'clear', pod: { namespace: 'default', name: 'gone' }, ip: '10.0.1.7' });
  await createPod('default', 'plain');
  await write({ kind: 'clear', pod: { namespace: 'default', name: 'plain' }, ip: '10.0.1.7' });
  assert.equal(await annotationOf('default', 'plain'), undefined);
  await assert.rejects(
    write({ kind: 'set', pod: { namespace: 'default', name: 'gone' }, ip: '10.0.1.7' }),
    /404/,
  );
});

/** A writer whose calls finish when the test says so, recording when each started. */
function heldWriter() {
  const started: PodIpWrite[] = [];
  const finish: (() => void)[] = [];
  return {
    started,
    finishNext: () => finish.shift()?.(),
    write: (w: PodIpWrite) =>
      new Promise<void>((resolve) => {
        started.push(w);
        finish.push(resolve);
      }),
  };
}

test("one pod's writes keep their order while other pods' go ahead, a few at a time", async () => {
  const w = heldWriter();
  const a = new QueuedPodIpAnnotations({ write: w.write, log: quiet, parallel: 2 });
  const p1 = { namespace: 'ns', name: 'p1' };
  const p2 = { namespace: 'ns', name: 'p2' };
  const p3 = { namespace: 'ns', name: 'p3' };
  a.added(p1, '10.0.0.1');
  a.released(p1, '10.0.0.1');
  a.added(p2, '10.0.0.2');
  a.added(p3, '10.0.0.3');
  // p1's clear waits for its set; p2 goes ahead beside it; p3 waits for a free slot.
  assert.deepEqual(
    w.started.map((s) => `${s.kind} ${s.pod.name}`),
    ['set p1', 'set p2'],
  );
  w.finishNext();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    w.started.map((s) => `${s.kind} ${s.pod.name}`),
    ['set p1', 'set p2', 'clear p1'],
  );
  assert.equal(a.figures().queued, 1);
  let idle = false;
  void a.idle().then(() => {
    idle = true;
  });
  while (!idle) {
    w.finishNext();
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(
    w.started.map((s) => `${s.kind} ${s.pod.name}`),
    ['set p1', 'set p2', 'clear p1', 'set p3'],
  );
  assert.deepEqual(a.figures(), { written: 4, failed: 0, dropped: 0, queued: 0 });
});

test('a full queue drops writes and counts them; failures are counted and logged once; a stop drops what waits', async () => {
  const warned: string[] = [];
  const log = { warn: (m: string) => warned.push(m) };
  const w = heldWriter();
  const a = new QueuedPodIpAnnotations({ write: w.write, log, parallel: 1, capacity: 2 });
  for (let i = 0; i < 5; i++) a.added({ namespace: 'ns', name: `p${i}` }, `10.0.0.${i}`);
  // One under way, two queued, two dropped.
  assert.deepEqual(a.figures(), { written: 0, failed: 0, dropped: 2, queued: 2 });
  await a.stop();
  assert.deepEqual(a.figures(), { written: 0, failed: 0, dropped: 4, queued: 0 });
  w.finishNext();
  await a.idle();
  assert.deepEqual(a.figures(), { written: 1, failed: 0, dropped: 4, queued: 0 });
  assert.equal(warned.length, 1);

  const failing = new QueuedPodIpAnnotations({
    write: () => Promise.reject(new Error('PATCH: 403 Forbidden')),
    log,
  });
  failing.added({ namespace: 'ns', name: 'a' }, '10.0.0.1');
  failing.added({ namespace: 'ns', name: 'b' }, '10.0.0.2');
  await failing.idle();
  assert.deepEqual(failing.figures(), { written: 0, failed: 2, dropped: 0, queued: 0 });
  assert.equal(warned.length, 2);
  assert.match(warned[1] ?? '', /cannot write pod annotation vpc\.amazonaws\.com\/pod-ips/);
});
