import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function api(method: string, path: string, body?: unknown, contentType?: string) {
  return t.kube<Record<string, unknown> & { metadata: Record<string, unknown> }>(
    method,
    path,
    body,
    contentType,
  );
}

function pod(name: string, nodeName: string, extra: Record<string, unknown> = {}) {
  return { metadata: { name, ...extra }, spec: { nodeName, containers: [{ name: 'c', image: 'pause' }] } };
}

/** Opens a watch and collects its newline-delimited events until `count` arrived. */
function watch(
  path: string,
  count: number,
): {
  events: Promise<{ type: string; object: { metadata: Record<string, unknown> } }[]>;
  ready: Promise<void>;
} {
  let ready!: () => void;
  const readyP = new Promise<void>((r) => {
    ready = r;
  });
  const events = new Promise<{ type: string; object: { metadata: Record<string, unknown> } }[]>(
    (resolve, reject) => {
      const req = request(`${t.url}${path}`, (res) => {
        assert.equal(res.statusCode, 200);
        ready();
        const got: { type: string; object: { metadata: Record<string, unknown> } }[] = [];
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
      });
      req.on('error', (e) => {
        if (!(e as NodeJS.ErrnoException).code?.includes('ECONNRESET')) reject(e);
      });
      req.end();
    },
  );
  return { events, ready: readyP };
}

test('a created pod gets a uid and resourceVersion and can be read back', async () => {
  const created = await api('POST', '/api/v1/namespaces/default/pods', pod('web-1', 'node-a'));
  assert.equal(created.status, 201);
  assert.match(String(created.json.metadata.uid), /^[0-9a-f-]{36}$/);
  assert.match(String(created.json.metadata.resourceVersion), /^\d+$/);
  const read = await api('GET', '/api/v1/namespaces/default/pods/web-1');
  assert.equal(read.status, 200);
  assert.equal(read.json.metadata.uid, created.json.metadata.uid);
  assert.equal((read.json.spec as { nodeName: string }).nodeName, 'node-a');
});

test('a given uid is kept; a duplicate name is answered 409 AlreadyExists', async () => {
  const created = await api('POST', '/api/v1/namespaces/ns1/pods', pod('p', 'node-a', { uid: 'uid-fixed' }));
  assert.equal(created.json.metadata.uid, 'uid-fixed');
  const again = await api('POST', '/api/v1/namespaces/ns1/pods', pod('p', 'node-a'));
  assert.equal(again.status, 409);
  assert.equal(again.json.reason, 'AlreadyExists');
});

test('GET of an unknown pod is answered 404 with a Status object', async () => {
  const r = await api('GET', '/api/v1/namespaces/default/pods/ghost');
  assert.equal(r.status, 404);
  assert.equal(r.json.kind, 'Status');
  assert.equal(r.json.reason, 'NotFound');
  assert.equal(r.json.code, 404);
});

test('a merge patch adds, changes and removes annotations and bumps resourceVersion', async () => {
  const created = await api(
    'POST',
    '/api/v1/namespaces/default/pods',
    pod('annotated', 'node-a', { annotations: { a: '1', b: '2' }, labels: { app: 'x' } }),
  );
  const patched = await api(
    'PATCH',
    '/api/v1/namespaces/default/pods/annotated',
    {
      metadata: {
        annotations: { b: null, 'vpc.amazonaws.com/pod-eni': '[{"eniId":"eni-1"}]' },
        labels: { tier: 'y' },
      },
    },
    'application/merge-patch+json',
  );
  assert.equal(patched.status, 200);
  assert.deepEqual(patched.json.metadata.annotations, {
    a: '1',
    'vpc.amazonaws.com/pod-eni': '[{"eniId":"eni-1"}]',
  });
  assert.deepEqual(patched.json.metadata.labels, { app: 'x', tier: 'y' });
  assert.equal(patched.json.metadata.uid, created.json.metadata.uid);
  assert.ok(Number(patched.json.metadata.resourceVersion) > Number(created.json.metadata.resourceVersion));
  const strategic = await api(
    'PATCH',
    '/api/v1/namespaces/default/pods/annotated',
    { metadata: { annotations: { c: '3' } } },
    'application/strategic-merge-patch+json',
  );
  assert.equal((strategic.json.metadata.annotations as Record<string, string>).c, '3');
  const wrongType = await api('PATCH', '/api/v1/namespaces/default/pods/annotated', {}, 'application/json');
  assert.equal(wrongType.status, 415);
});

test("a pod list with fieldSelector spec.nodeName returns only that node's pods", async () => {
  await api('POST', '/api/v1/namespaces/sel/pods', pod('on-b1', 'node-b'));
  await api('POST', '/api/v1/namespaces/sel/pods', pod('on-c1', 'node-c'));
  const r = await api('GET', `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=node-b')}`);
  assert.equal(r.json.kind, 'PodList');
  const names = (r.json.items as { metadata: { name: string } }[]).map((p) => p.metadata.name);
  assert.deepEqual(names, ['on-b1']);
});

test('a watch from a resourceVersion delivers ADDED, MODIFIED and DELETED for its node only', async () => {
  const list = await api('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-w');
  const rv = String(list.json.metadata.resourceVersion);
  const w = watch(`/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-w&watch=true&resourceVersion=${rv}`, 3);
  await w.ready;
  await api('POST', '/api/v1/namespaces/w/pods', pod('other', 'node-x'));
  await api('POST', '/api/v1/namespaces/w/pods', pod('mine', 'node-w'));
  await api(
    'PATCH',
    '/api/v1/namespaces/w/pods/mine',
    { metadata: { annotations: { k: 'v' } } },
    'application/merge-patch+json',
  );
  await api('DELETE', '/api/v1/namespaces/w/pods/mine');
  const events = await w.events;
  assert.deepEqual(
    events.map((e) => [e.type, e.object.metadata.name]),
    [
      ['ADDED', 'mine'],
      ['MODIFIED', 'mine'],
      ['DELETED', 'mine'],
    ],
  );
  assert.deepEqual(events[1]?.object.metadata.annotations, { k: 'v' });
});

test('a watch resumed from an older resourceVersion replays the events it missed', async () => {
  const created = await api('POST', '/api/v1/namespaces/r/pods', pod('replayed', 'node-r'));
  const rv = Number(created.json.metadata.resourceVersion) - 1;
  const w = watch(`/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-r&watch=true&resourceVersion=${rv}`, 1);
  const [first] = await w.events;
  assert.equal(first?.type, 'ADDED');
  assert.equal(first?.object.metadata.name, 'replayed');
});

test('GET /api/v1/nodes/{name} returns a Node for an instance launched with that node name', async () => {
  const inst = await t.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: SUBNET_A,
    nodeName: 'node-1',
  });
  const r = await api('GET', '/api/v1/nodes/node-1');
  assert.equal(r.status, 200);
  assert.equal(r.json.kind, 'Node');
  assert.equal((r.json.spec as { providerID: string }).providerID, `aws:///us-west-2a/${inst.instanceId}`);
  assert.equal(
    (r.json.metadata.labels as Record<string, string>)['node.kubernetes.io/instance-type'],
    'm5.large',
  );
  assert.deepEqual((r.json.status as { addresses: unknown }).addresses, [
    { type: 'InternalIP', address: inst.primaryEni.primaryIp },
  ]);
  assert.equal((await api('GET', '/api/v1/nodes/node-404')).status, 404);
});
