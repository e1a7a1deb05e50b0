// Nodes of the Kubernetes slice: registered per launched instance, labels and annotations changed
// by PATCH (what the agent does with vpc.amazonaws.com/has-trunk-attached), list and watch.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

type Node = {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
};

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function api(method: string, path: string, body?: unknown, contentType?: string) {
  return t.kube<Node & Record<string, unknown>>(method, path, body, contentType);
}

/** Collects `count` watch events, calling `act` once the watch is open. */
function watchEvents(path: string, count: number, act: () => Promise<void>) {
  return new Promise<{ type: string; object: Node }[]>((resolve, reject) => {
    const got: { type: string; object: Node }[] = [];
    const req = request(`${t.url}${path}`, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          got.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          if (got.length === count) {
            req.destroy();
            resolve(got);
          }
        }
      });
      act().catch(reject);
    });
    req.on('error', (e) => {
      if (got.length < count) reject(e);
    });
    req.end();
  });
}

test('PATCH of a node (merge, strategic merge or JSON patch) sets and removes labels and annotations and bumps resourceVersion', async () => {
  await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'patched' });
  const before = await api('GET', '/api/v1/nodes/patched');
  const patched = await api(
    'PATCH',
    '/api/v1/nodes/patched',
    {
      metadata: {
        name: 'renamed',
        uid: 'stolen',
        labels: { 'vpc.amazonaws.com/has-trunk-attached': 'false' },
        annotations: { note: 'x' },
      },
    },
    'application/merge-patch+json',
  );
  assert.equal(patched.status, 200);
  assert.equal(patched.json.metadata.labels['vpc.amazonaws.com/has-trunk-attached'], 'false');
  assert.equal(patched.json.metadata.labels['node.kubernetes.io/instance-type'], 'm5.large');
  assert.deepEqual(patched.json.metadata.annotations, { note: 'x' });
  assert.equal(patched.json.metadata.name, 'patched');
  assert.equal(patched.json.metadata.uid, before.json.metadata.uid);
  assert.ok(Number(patched.json.metadata.resourceVersion) > Number(before.json.metadata.resourceVersion));

  const strategic = await api(
    'PATCH',
    '/api/v1/nodes/patched',
    { metadata: { labels: { 'vpc.amazonaws.com/has-trunk-attached': 'true' }, annotations: { note: null } } },
    'application/strategic-merge-patch+json',
  );
  assert.equal(strategic.status, 200);
  const read = await api('GET', '/api/v1/nodes/patched');
  assert.equal(read.json.metadata.labels['vpc.amazonaws.com/has-trunk-attached'], 'true');
  assert.deepEqual(read.json.metadata.annotations, {});
  assert.equal(read.json.metadata.resourceVersion, strategic.json.metadata.resourceVersion);

  // JSON patch, client-node 1.x's default PATCH content type.
  const jsonPatched = await api(
    'PATCH',
    '/api/v1/nodes/patched',
    [{ op: 'replace', path: '/metadata/labels/vpc.amazonaws.com~1has-trunk-attached', value: 'false' }],
    'application/json-patch+json',
  );
  assert.equal(jsonPatched.status, 200);
  assert.equal(jsonPatched.json.metadata.labels['vpc.amazonaws.com/has-trunk-attached'], 'false');
  assert.equal(jsonPatched.json.metadata.uid, before.json.metadata.uid);
  assert.equal((await api('PATCH', '/api/v1/nodes/patched', {}, 'application/json')).status, 415);
  assert.equal((await api('PATCH', '/api/v1/nodes/ghost', {}, 'application/merge-patch+json')).status, 404);
});

test('GET /api/v1/nodes lists the nodes with a labelSelector and the cluster resourceVersion', async () => {
  await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A, nodeName: 'listed' });
  const all = await api('GET', '/api/v1/nodes');
  assert.equal(all.json.kind, 'NodeList');
  assert.match(
    String((all.json.metadata as unknown as { resourceVersion: string }).resourceVersion),
    /^\d+$/,
  );
  const names = (all.json.items as Node[]).map((n) => n.metadata.name);
  assert.ok(names.includes('listed'));
  const selected = await api(
    'GET',
    `/api/v1/nodes?labelSelector=${encodeURIComponent('node.kubernetes.io/instance-type=t3.medium')}`,
  );
  assert.deepEqual(
    (selected.json.items as Node[]).map((n) => n.metadata.name),
    ['listed'],
  );
});

test('a node watch from the list resourceVersion sees ADDED on launch, MODIFIED on PATCH and DELETED on termination', async () => {
  const list = await api('GET', '/api/v1/nodes');
  const rv = (list.json.metadata as unknown as { resourceVersion: string }).resourceVersion;
  let instanceId = '';
  const events = await watchEvents(
    `/api/v1/nodes?watch=true&resourceVersion=${rv}&fieldSelector=${encodeURIComponent('metadata.name=watched')}`,
    3,
    async () => {
      instanceId = (
        await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'watched' })
      ).instanceId;
      await api(
        'PATCH',
        '/api/v1/nodes/watched',
        { metadata: { labels: { a: 'b' } } },
        'application/merge-patch+json',
      );
      await t.emulator.terminateInstance(instanceId);
    },
  );
  assert.deepEqual(
    events.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'watched'],
      ['MODIFIED', 'watched'],
      ['DELETED', 'watched'],
    ],
  );
  assert.equal(events[1]?.object.metadata.labels.a, 'b');
  assert.equal((await api('GET', '/api/v1/nodes/watched')).status, 404);
});

test('nodes/{name}/status: a strategic merge patch sets one condition and keeps the others', async () => {
  await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A, nodeName: 'node-status' });
  const path = '/api/v1/nodes/node-status/status';
  const condition = { type: 'vpcnet.io/NetworkReady', status: 'False', reason: 'PoolEmpty:MaxEnis' };
  const patched = await t.kube<{
    status: { conditions: { type: string; status: string; reason?: string }[] };
  }>(
    'PATCH',
    path,
    { status: { conditions: [condition] }, spec: { taints: [{ key: 'ignored', effect: 'NoSchedule' }] } },
    'application/strategic-merge-patch+json',
  );
  assert.equal(patched.status, 200);
  assert.deepEqual(
    patched.json.status.conditions.map((c) => c.type),
    ['Ready', 'vpcnet.io/NetworkReady'],
  );
  const node = await t.kube<{ spec: { taints?: unknown } }>('GET', '/api/v1/nodes/node-status');
  assert.equal(node.json.spec.taints, undefined, 'a status patch changes the status alone');
  const again = await t.kube<{ status: { conditions: { type: string; status: string }[] } }>(
    'PATCH',
    path,
    { status: { conditions: [{ ...condition, status: 'True', reason: 'Serving' }] } },
    'application/strategic-merge-patch+json',
  );
  assert.deepEqual(
    again.json.status.conditions.map((c) => [c.type, c.status]),
    [
      ['Ready', 'True'],
      ['vpcnet.io/NetworkReady', 'True'],
    ],
  );
  const line = t.logs.findLast((l) => l.msg === 'kube' && l.path === path);
  assert.deepEqual(line?.changed, ['status.conditions']);
  const unsupported = await t.kube('PATCH', path, [], 'application/json-patch+json');
  assert.equal(unsupported.status, 415);
});
