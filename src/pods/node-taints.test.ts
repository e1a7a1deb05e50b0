// The startup taint's removal against the emulator's Kubernetes slice: only that taint goes, the
// node's other taints stay in order, and a taint list changed meanwhile is never overwritten.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { apiStatus, KubeClient } from './kube-client.ts';
import {
  JSON_PATCH,
  kubeNodeTaints,
  taintAdditionPatch,
  taintRemovalPatch,
  taintsOf,
} from './node-taints.ts';

const STARTUP = 'node.vpcnet.io/agent-not-ready';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(() => emu.close());

async function nodeWithTaints(name: string, taints: unknown[]): Promise<KubeClient> {
  await emu.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: name });
  const client = new KubeClient({ baseUrl: emu.url });
  await client.request(
    'PATCH',
    `/api/v1/nodes/${name}`,
    [{ op: 'add', path: '/spec/taints', value: taints }],
    JSON_PATCH,
  );
  return client;
}

const other = { key: 'example.com/dedicated', value: 'gpu', effect: 'NoSchedule' };
const later = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' };

test('removing the startup taint keeps every other taint of the node, in order', async () => {
  const client = await nodeWithTaints('tainted-1', [other, { key: STARTUP, effect: 'NoSchedule' }, later]);
  const taints = kubeNodeTaints({ baseUrl: emu.url }, 'tainted-1');
  assert.equal(await taints.remove(STARTUP), 'removed');
  assert.deepEqual(taintsOf(await client.getNode('tainted-1'), 'tainted-1'), [other, later]);
  assert.equal(await taints.remove(STARTUP), 'absent', 'a second removal finds nothing');
  assert.deepEqual(taintsOf(await client.getNode('tainted-1'), 'tainted-1'), [other, later]);
});

test('a node without taints has nothing to remove and is left as it was', async () => {
  await emu.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'plain-1' });
  const client = new KubeClient({ baseUrl: emu.url });
  const before = (await client.getNode('plain-1')) as { metadata: { resourceVersion: string } };
  assert.equal(await kubeNodeTaints({ baseUrl: emu.url }, 'plain-1').remove(STARTUP), 'absent');
  const after = (await client.getNode('plain-1')) as { metadata: { resourceVersion: string } };
  assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
});

test('a patch computed from a taint list that changed since is refused, and removes nothing', async () => {
  const client = await nodeWithTaints('tainted-2', [{ key: STARTUP, effect: 'NoSchedule' }, later]);
  const stale = taintRemovalPatch(taintsOf(await client.getNode('tainted-2'), 'tainted-2'), STARTUP);
  // Another controller puts a taint in front meanwhile: index 0 is no longer the startup taint.
  await client.request(
    'PATCH',
    '/api/v1/nodes/tainted-2',
    [{ op: 'add', path: '/spec/taints/0', value: other }],
    JSON_PATCH,
  );
  const err = await client.request('PATCH', '/api/v1/nodes/tainted-2', stale, JSON_PATCH).then(
    () => assert.fail('the stale patch applied'),
    (e: unknown) => e,
  );
  assert.equal(apiStatus(err), 422);
  assert.deepEqual(
    taintsOf(await client.getNode('tainted-2'), 'tainted-2').map((t) => t.key),
    [other.key, STARTUP, later.key],
  );
  // A fresh read removes it.
  assert.equal(await kubeNodeTaints({ baseUrl: emu.url }, 'tainted-2').remove(STARTUP), 'removed');
  assert.deepEqual(taintsOf(await client.getNode('tainted-2'), 'tainted-2'), [other, later]);
});

test('a taint key that appears twice (two effects) goes entirely', () => {
  const list = [{ key: STARTUP, effect: 'NoSchedule' }, other, { key: STARTUP, effect: 'NoExecute' }];
  assert.deepEqual(
    taintRemovalPatch(list, STARTUP).map((op) => (op as { op: string; path: string }).path),
    ['/spec/taints/2', '/spec/taints/2', '/spec/taints/0', '/spec/taints/0'],
  );
});

test('adding a taint keeps the others; a taint someone changed meanwhile fails the patch instead of being lost', async () => {
  const client = await nodeWithTaints('tainted-add', [other]);
  const taints = kubeNodeTaints({ baseUrl: emu.url }, 'tainted-add');
  const exhausted = { key: 'vpcnet.io/ip-exhausted', effect: 'NoSchedule' } as const;
  assert.equal(await taints.add(exhausted), 'added');
  assert.deepEqual(taintsOf(await client.getNode('tainted-add'), 'tainted-add'), [other, exhausted]);
  assert.equal(await taints.add(exhausted), 'present');
  assert.equal(await taints.remove(exhausted.key), 'removed');
  assert.deepEqual(taintsOf(await client.getNode('tainted-add'), 'tainted-add'), [other]);
  // A read of [other], then someone adds `later`: the add tests the list it read and fails.
  const stale = taintAdditionPatch([other], true, exhausted);
  await client.request(
    'PATCH',
    '/api/v1/nodes/tainted-add',
    [{ op: 'add', path: '/spec/taints/-', value: later }],
    JSON_PATCH,
  );
  await assert.rejects(
    client.request('PATCH', '/api/v1/nodes/tainted-add', stale, JSON_PATCH),
    (e: unknown) => apiStatus(e) === 422,
  );
  assert.deepEqual(taintsOf(await client.getNode('tainted-add'), 'tainted-add'), [other, later]);
  // A node without any taint gets the list made.
  await emu.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'bare' });
  assert.equal(await kubeNodeTaints({ baseUrl: emu.url }, 'bare').add(exhausted), 'added');
  assert.deepEqual(taintsOf(await client.getNode('bare'), 'bare'), [exhausted]);
});
