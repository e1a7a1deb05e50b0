// Whether the agent's node is unschedulable (AWS_MANAGE_ENIS_NON_SCHEDULABLE), against the
// emulator's Kubernetes slice: the cordon taint with effect NoSchedule says so, another effect or
// another taint does not, and the answer follows the node as it changes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { KubeClient } from '../kube-client.ts';
import { carriesUnschedulableTaint, kubeNodeSchedulability } from './node-schedulable.ts';
import { JSON_PATCH } from './node-taints.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(() => emu.close());

test('the node counts as unschedulable while it carries node.kubernetes.io/unschedulable:NoSchedule', async () => {
  await emu.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'cordoned-1' });
  const client = new KubeClient({ baseUrl: emu.url });
  const setTaints = (taints: unknown[]) =>
    client.request(
      'PATCH',
      '/api/v1/nodes/cordoned-1',
      [{ op: 'add', path: '/spec/taints', value: taints }],
      JSON_PATCH,
    );
  const node = kubeNodeSchedulability({ baseUrl: emu.url }, 'cordoned-1');
  assert.equal(await node.unschedulable(), false, 'a node without taints');
  await setTaints([{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]);
  assert.equal(await node.unschedulable(), true, 'kubectl cordon');
  await setTaints([{ key: 'node.kubernetes.io/unschedulable', effect: 'PreferNoSchedule' }]);
  assert.equal(await node.unschedulable(), false, 'another effect');
  await setTaints([{ key: 'example.com/dedicated', effect: 'NoSchedule' }]);
  assert.equal(await node.unschedulable(), false, 'another taint');
});

test('an unknown node is an error for the caller, not an answer', async () => {
  await assert.rejects(kubeNodeSchedulability({ baseUrl: emu.url }, 'no-such-node').unschedulable());
  assert.equal(carriesUnschedulableTaint({ spec: {} }, 'n'), false);
});
