import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { KubePodSource, PodLookupError, parsePod } from './pod-source.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(async () => {
  await emu.close();
});

function createPod(body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL('/api/v1/namespaces/default/pods', emu.url);
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('a pod the emulated API knows comes back with its UID and annotations', async () => {
  const status = await createPod({
    metadata: { name: 'web-0', namespace: 'default', uid: 'uid-web-0', annotations: { a: 'b' } },
    spec: { nodeName: 'node1' },
  });
  assert.ok(status === 200 || status === 201, `create answered ${status}`);
  const pods = new KubePodSource({ baseUrl: emu.url });
  const pod = await pods.lookup('default', 'web-0');
  assert.deepEqual(pod, {
    name: 'web-0',
    namespace: 'default',
    uid: 'uid-web-0',
    nodeName: 'node1',
    annotations: { a: 'b' },
  });
});

test('a pod the API does not know is undefined, not an error', async () => {
  const pods = new KubePodSource({ baseUrl: emu.url });
  assert.equal(await pods.lookup('default', 'nope'), undefined);
});

test('an unreachable API is a PodLookupError naming the URL', async () => {
  const pods = new KubePodSource({ baseUrl: 'http://127.0.0.1:1' }, 500);
  await assert.rejects(
    pods.lookup('default', 'web-0'),
    (e: unknown) => e instanceof PodLookupError && /127\.0\.0\.1:1/.test(e.message),
  );
});

test('parsePod refuses a pod without identity', () => {
  assert.throws(() => parsePod({ metadata: { name: 'x' } }), PodLookupError);
});
