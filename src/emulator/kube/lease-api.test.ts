// Leases (coordination.k8s.io/v1) as the API server answers them, resourceVersion preconditions
// included; and the write log that says which watched fields a write changed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

type Lease = {
  kind: string;
  apiVersion: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    annotations?: Record<string, string>;
  };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
};

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';

test('a Lease is created, read and updated; an update naming an older resourceVersion is 409 Conflict', async () => {
  const created = await t.kube<Lease>('POST', LEASES, {
    metadata: { name: 'vpcnet-census' },
    spec: { holderIdentity: 'node-a', leaseDurationSeconds: 60 },
  });
  assert.equal(created.status, 201);
  assert.equal(created.json.kind, 'Lease');
  assert.equal(created.json.apiVersion, 'coordination.k8s.io/v1');
  assert.equal(created.json.metadata.namespace, 'kube-system');
  const again = await t.kube('POST', LEASES, { metadata: { name: 'vpcnet-census' }, spec: {} });
  assert.equal(again.status, 409);
  const read = await t.kube<Lease>('GET', `${LEASES}/vpcnet-census`);
  const renewed = await t.kube<Lease>('PUT', `${LEASES}/vpcnet-census`, {
    ...read.json,
    spec: { ...read.json.spec, renewTime: '2024-01-01T00:00:00.000000Z' },
  });
  assert.equal(renewed.status, 200);
  assert.notEqual(renewed.json.metadata.resourceVersion, read.json.metadata.resourceVersion);
  // Another candidate wrote from the same read: refused, the first write stands.
  const stale = await t.kube<Lease>('PUT', `${LEASES}/vpcnet-census`, {
    ...read.json,
    spec: { ...read.json.spec, holderIdentity: 'node-b' },
  });
  assert.equal(stale.status, 409);
  assert.equal((await t.kube<Lease>('GET', `${LEASES}/vpcnet-census`)).json.spec.holderIdentity, 'node-a');
  const list = await t.kube<{ items: Lease[] }>('GET', LEASES);
  assert.deepEqual(
    list.json.items.map((l) => l.metadata.name),
    ['vpcnet-census'],
  );
  assert.equal((await t.kube('GET', `${LEASES}/nope`)).status, 404);
});

test('the write log names the fields a write changed, and only those', async () => {
  await t.kube('POST', LEASES, { metadata: { name: 'log-me' }, spec: { holderIdentity: 'a' } });
  const lease = await t.kube<Lease>('GET', `${LEASES}/log-me`);
  await t.kube('PUT', `${LEASES}/log-me`, { ...lease.json, spec: { holderIdentity: 'b' } });
  await t.kube(
    'PATCH',
    `${LEASES}/log-me`,
    { metadata: { annotations: { x: '1' } } },
    'application/merge-patch+json',
  );
  const lines = t.logs
    .filter((l) => l.msg === 'kube' && (l.path === LEASES || String(l.path).endsWith('/log-me')))
    .slice(-3);
  assert.deepEqual(
    lines.map((l) => [l.method, l.status, l.changed]),
    [
      ['POST', 201, ['spec.holderIdentity']],
      ['PUT', 200, ['spec.holderIdentity']],
      ['PATCH', 200, ['metadata.annotations']],
    ],
  );
});
