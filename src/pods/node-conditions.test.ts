// The node condition against the emulator's API server: one condition merged into the node's
// status by type, the kubelet's Ready kept.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { KubeClient } from './kube-client.ts';
import { kubeNodeConditions, reportedMaxPods } from './node-conditions.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(() => emu.close());

type Conditions = { status: { conditions: Record<string, string>[] } };

test('a condition is merged into the node status by type and written again in place', async () => {
  await emu.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'cond-1' });
  const conditions = kubeNodeConditions({ baseUrl: emu.url }, 'cond-1');
  const client = new KubeClient({ baseUrl: emu.url });
  const base = {
    type: 'vpcnet.io/NetworkReady',
    lastTransitionTime: 1_700_000_000_000,
    lastHeartbeatTime: 1_700_000_000_000,
  };
  await conditions.set({ ...base, status: 'False', reason: 'PoolEmpty:MaxEnis', message: 'no free address' });
  await conditions.set({
    ...base,
    status: 'True',
    reason: 'Serving',
    message: '3 free',
    lastHeartbeatTime: 1_700_000_005_000,
  });
  const node = (await client.getNode('cond-1')) as Conditions;
  assert.deepEqual(
    node.status.conditions.map((c) => [c.type, c.status, c.reason]),
    [
      ['Ready', 'True', undefined],
      ['vpcnet.io/NetworkReady', 'True', 'Serving'],
    ],
  );
  assert.equal(node.status.conditions[1]?.lastHeartbeatTime, '2023-11-14T22:13:25Z');
  assert.equal(node.status.conditions[1]?.lastTransitionTime, '2023-11-14T22:13:20Z');
  client.close();
});

test('the kubelet’s maxPods is read from the node’s capacity', () => {
  assert.equal(reportedMaxPods({ status: { capacity: { pods: '110' } } }), 110);
  assert.equal(reportedMaxPods({ status: { capacity: {} } }), undefined);
  assert.equal(reportedMaxPods({ status: { capacity: { pods: 'many' } } }), undefined);
});
