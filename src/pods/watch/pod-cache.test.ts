// The pod cache with the agent's own client against the emulator's Kubernetes slice.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { silentLogger } from '../../infra/log.ts';
import { HAS_TRUNK_LABEL, kubeNodeLabels } from '../node/node-labels.ts';
import { POD_ENI_ANNOTATION } from '../pod-eni.ts';
import { KubePodCache } from './pod-cache.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(async () => {
  await emu.close();
});

function api(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, emu.url),
      { method, headers: { 'content-type': contentType } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

function pod(
  name: string,
  node: string,
  extra: { uid?: string; podEni?: boolean; annotations?: Record<string, string> } = {},
) {
  return {
    metadata: {
      name,
      namespace: 'default',
      ...(extra.uid ? { uid: extra.uid } : {}),
      annotations: extra.annotations ?? {},
    },
    spec: {
      nodeName: node,
      containers: [
        {
          name: 'app',
          image: 'pause',
          ...(extra.podEni ? { resources: { limits: { 'vpc.amazonaws.com/pod-eni': '1' } } } : {}),
        },
      ],
    },
  };
}

async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('pods of this node are answered from the watch cache; others, unknown ones and a stale UID cost one GET', async () => {
  await api('POST', '/api/v1/namespaces/default/pods', pod('cached-0', 'node-c', { uid: 'u-cached-0' }));
  await api('POST', '/api/v1/namespaces/default/pods', pod('elsewhere-0', 'node-other', { uid: 'u-else' }));
  const cache = new KubePodCache({ api: { baseUrl: emu.url }, nodeName: 'node-c', log: silentLogger });
  await cache.start();
  try {
    await until(
      async () => (await cache.lookup('default', 'cached-0'))?.uid === 'u-cached-0' && cache.counts.cache > 0,
      'listed',
    );
    const before = { ...cache.counts };
    assert.equal((await cache.lookup('default', 'cached-0'))?.uid, 'u-cached-0');
    assert.equal(cache.counts.get, before.get, 'a cached pod costs no GET');
    assert.equal((await cache.lookup('default', 'elsewhere-0'))?.nodeName, 'node-other');
    assert.equal(cache.counts.get, before.get + 1, 'a pod of another node is not cached: one GET');
    assert.equal(await cache.lookup('default', 'nope'), undefined);
    assert.equal((await cache.lookup('default', 'cached-0', 'another-uid'))?.uid, 'u-cached-0');
    assert.equal(cache.counts.get, before.get + 3, 'a UID the cache does not have: one GET');
  } finally {
    await cache.stop();
  }
});

test('a pod that asks for a branch ENI is re-read until the controller has written its annotation', async () => {
  await api(
    'POST',
    '/api/v1/namespaces/default/pods',
    pod('sg-0', 'node-s', { uid: 'u-sg-0', podEni: true }),
  );
  const cache = new KubePodCache({ api: { baseUrl: emu.url }, nodeName: 'node-s', log: silentLogger });
  await cache.start();
  try {
    await until(() => cache.counts.cache + cache.counts.get >= 0, 'started');
    const bare = await cache.lookup('default', 'sg-0');
    assert.equal(bare?.requestsPodEni, true);
    assert.equal(bare?.annotations[POD_ENI_ANNOTATION], undefined);
    const gets = cache.counts.get;
    await cache.lookup('default', 'sg-0');
    assert.equal(cache.counts.get, gets + 1, 'no annotation yet: the cache is not trusted, one GET');
    const patched = await api(
      'PATCH',
      '/api/v1/namespaces/default/pods/sg-0',
      { metadata: { annotations: { [POD_ENI_ANNOTATION]: '[{"eniId":"eni-0123456789abcdef0"}]' } } },
      'application/merge-patch+json',
    );
    assert.equal(patched.status, 200);
    await until(async () => {
      const before = cache.counts.cache;
      const got = await cache.lookup('default', 'sg-0');
      return got?.annotations[POD_ENI_ANNOTATION] !== undefined && cache.counts.cache > before;
    }, 'the watch delivered the annotation');
  } finally {
    await cache.stop();
  }
});

test('pods created after the server ended a watch reach the cache through the next one', async () => {
  const cache = new KubePodCache({
    api: { baseUrl: emu.url },
    nodeName: 'node-w',
    log: silentLogger,
    watchSeconds: 1,
  });
  await cache.start();
  try {
    // The emulator ends each watch after a second; the cache watches again from where it was.
    await new Promise((r) => setTimeout(r, 1500));
    await api('POST', '/api/v1/namespaces/default/pods', pod('late-0', 'node-w', { uid: 'u-late-0' }));
    await new Promise((r) => setTimeout(r, 1200));
    await api('POST', '/api/v1/namespaces/default/pods', pod('later-0', 'node-w', { uid: 'u-later-0' }));
    await until(async () => {
      const before = cache.counts.cache;
      const late = await cache.lookup('default', 'late-0');
      const later = await cache.lookup('default', 'later-0');
      return late?.uid === 'u-late-0' && later?.uid === 'u-later-0' && cache.counts.cache === before + 2;
    }, 'both pods answered from the cache');
    assert.deepEqual((await cache.listOnNode()).map((p) => p.name).sort(), ['late-0', 'later-0']);
  } finally {
    await cache.stop();
  }
});

test('an unreachable API fails the lookup in bounded time, naming the API', async () => {
  const cache = new KubePodCache({
    api: { baseUrl: 'http://127.0.0.1:1' },
    nodeName: 'n',
    log: silentLogger,
    timeoutMs: 1000,
  });
  await assert.rejects(cache.lookup('default', 'web-0'), /127\.0\.0\.1:1/);
});

test('the agent labels its own node through the API', async () => {
  const launched = await emu.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: 'subnet-aaaaaaaaaaaaaaaaa',
    nodeName: 'node-l',
  });
  assert.ok(launched.instanceId);
  await kubeNodeLabels({ baseUrl: emu.url }, 'node-l').set(HAS_TRUNK_LABEL, 'false');
  const node = JSON.parse((await api('GET', '/api/v1/nodes/node-l')).body) as {
    metadata: { labels: Record<string, string> };
  };
  assert.equal(node.metadata.labels[HAS_TRUNK_LABEL], 'false');
});
