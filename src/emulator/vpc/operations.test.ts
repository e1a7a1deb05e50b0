import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
} from '@aws-sdk/client-ec2';
import type { Fabric, FabricEni } from '../api.ts';
import { SUBNET_A, startTestEmulator, TEST_VPC } from '../testing/test-emulator.ts';
import { IdSource, seededRandom } from './ids.ts';
import { VpcOperations } from './operations.ts';
import { VpcState } from './state.ts';

/** Records every hook call; `failOn` makes the named hook reject (once per listed name). */
class RecordingFabric implements Fabric {
  readonly calls: string[] = [];
  failOn = new Set<string>();

  #hook(name: string, detail: string): Promise<void> {
    this.calls.push(`${name} ${detail}`);
    if (this.failOn.delete(name)) return Promise.reject(new Error(`${name} failed`));
    return Promise.resolve();
  }
  eniAttached(netns: string, deviceIndex: number, eni: FabricEni) {
    return this.#hook('eniAttached', `${netns} ${deviceIndex} ${eni.eniId}`);
  }
  eniDetached(netns: string, deviceIndex: number, eni: FabricEni) {
    return this.#hook('eniDetached', `${netns} ${deviceIndex} ${eni.eniId}`);
  }
  addressesAssigned(eni: FabricEni, ips: readonly string[]) {
    return this.#hook('addressesAssigned', `${eni.eniId} ${ips.join(',')}`);
  }
  addressesUnassigned(eni: FabricEni, ips: readonly string[]) {
    return this.#hook('addressesUnassigned', `${eni.eniId} ${ips.join(',')}`);
  }
}

function setup() {
  const fabric = new RecordingFabric();
  const state = new VpcState(TEST_VPC, new IdSource(seededRandom(3)));
  const ops = new VpcOperations(state, fabric, () => {});
  return { fabric, state, ops };
}

test('launch tells the fabric about the primary ENI at device 0 with subnet and gateway', async () => {
  const fabric = new RecordingFabric();
  const seen: FabricEni[] = [];
  const original = fabric.eniAttached.bind(fabric);
  fabric.eniAttached = (netns, index, eni) => {
    seen.push(eni);
    return original(netns, index, eni);
  };
  const ops = new VpcOperations(new VpcState(TEST_VPC, new IdSource(seededRandom(3))), fabric, () => {});
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'lab-node1' });
  assert.deepEqual(fabric.calls, [`eniAttached lab-node1 0 ${inst.primaryEni.eniId}`]);
  assert.deepEqual(seen, [
    {
      eniId: inst.primaryEni.eniId,
      mac: inst.primaryEni.mac,
      primaryIp: inst.primaryEni.primaryIp,
      subnetCidr: '10.0.0.0/24',
      gateway: '10.0.0.1',
    },
  ]);
});

test('an instance without a netns causes no fabric calls', async () => {
  const { fabric, ops } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A });
  await ops.assign(inst.primaryEni.eniId, { count: 2 });
  assert.deepEqual(fabric.calls, []);
});

test('attach, assign, unassign, detach and terminate call the hooks in order', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const eni = ops.createEni({ subnetId: SUBNET_A });
  const eniAttachment = await ops.attach(eni.eniId, inst.instanceId, 1);
  const ips = await ops.assign(eni.eniId, { count: 2 });
  await ops.unassign(eni.eniId, [ips[0]!]);
  await ops.detach(eniAttachment.attachmentId);
  await ops.attach(eni.eniId, inst.instanceId, 2);
  await ops.terminate(inst.instanceId);
  const p = inst.primaryEni.eniId;
  const e = eni.eniId;
  assert.deepEqual(fabric.calls, [
    `eniAttached n1 0 ${p}`,
    `eniAttached n1 1 ${e}`,
    `addressesAssigned ${e} ${ips.join(',')}`,
    `addressesUnassigned ${e} ${ips[0]}`,
    `addressesUnassigned ${e} ${ips[1]}`,
    `eniDetached n1 1 ${e}`,
    `eniAttached n1 2 ${e}`,
    `addressesAssigned ${e} ${ips[1]}`,
    `addressesUnassigned ${e} ${ips[1]}`,
    `eniDetached n1 2 ${e}`,
    `eniDetached n1 0 ${p}`,
  ]);
  // terminate deleted the DeleteOnTermination primary ENI and only detached the other one
  assert.throws(() => state.eni(p), { code: 'InvalidNetworkInterfaceID.NotFound' });
  assert.equal(state.eni(e).attachment, undefined);
  assert.throws(() => state.instance(inst.instanceId), { code: 'InvalidInstanceID.NotFound' });
});

test('a failing eniAttached fails the attach with InternalError and leaves the ENI detached', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const eni = ops.createEni({ subnetId: SUBNET_A });
  fabric.failOn.add('eniAttached');
  await assert.rejects(ops.attach(eni.eniId, inst.instanceId, 1), { code: 'InternalError', status: 500 });
  assert.equal(state.eni(eni.eniId).attachment, undefined);
  assert.equal(state.enisOf(inst.instanceId).length, 1);
});

test('a failing address hook during attach undoes the link it had already made', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const eni = ops.createEni({ subnetId: SUBNET_A });
  await ops.assign(eni.eniId, { count: 1 });
  fabric.calls.length = 0;
  fabric.failOn.add('addressesAssigned');
  await assert.rejects(ops.attach(eni.eniId, inst.instanceId, 1), { code: 'InternalError' });
  assert.deepEqual(
    fabric.calls.map((c) => c.split(' ')[0]),
    ['eniAttached', 'addressesAssigned', 'eniDetached'],
  );
  assert.equal(state.eni(eni.eniId).attachment, undefined);
});

test('a failing addressesAssigned rolls the assign back: the addresses return to the subnet', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const free = state.subnet(SUBNET_A).availableCount;
  fabric.failOn.add('addressesAssigned');
  await assert.rejects(ops.assign(inst.primaryEni.eniId, { count: 3 }), { code: 'InternalError' });
  assert.deepEqual(state.eni(inst.primaryEni.eniId).secondaryIps, []);
  assert.equal(state.subnet(SUBNET_A).availableCount, free);
});

test('a failing addressesUnassigned keeps the addresses on the ENI', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const ips = await ops.assign(inst.primaryEni.eniId, { count: 2 });
  fabric.failOn.add('addressesUnassigned');
  await assert.rejects(ops.unassign(inst.primaryEni.eniId, ips), { code: 'InternalError' });
  assert.deepEqual(state.eni(inst.primaryEni.eniId).secondaryIps, ips);
});

test('a failing eniDetached keeps the attachment', async () => {
  const { fabric, ops, state } = setup();
  const inst = await ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const eni = ops.createEni({ subnetId: SUBNET_A });
  const eniAttachment = await ops.attach(eni.eniId, inst.instanceId, 1);
  fabric.failOn.add('eniDetached');
  await assert.rejects(ops.detach(eniAttachment.attachmentId), { code: 'InternalError' });
  assert.equal(state.eni(eni.eniId).attachment?.attachmentId, eniAttachment.attachmentId);
});

test('a failing fabric at launch leaves no instance and no ENI behind', async () => {
  const { fabric, ops, state } = setup();
  fabric.failOn.add('eniAttached');
  await assert.rejects(ops.launch({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' }), {
    code: 'InternalError',
  });
  assert.deepEqual(state.instances(), []);
  assert.deepEqual(state.enis(), []);
});

test('over EC2, the hook has run before the reply arrives, and a hook failure is a 500 InternalError', async () => {
  const fabric = new RecordingFabric();
  const t = await startTestEmulator({ fabric });
  try {
    const inst = await t.emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: SUBNET_A,
      netns: 'n1',
    });
    const out = await t.ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: inst.primaryEni.eniId,
        SecondaryPrivateIpAddressCount: 1,
      }),
    );
    const ip = out.AssignedPrivateIpAddresses?.[0]?.PrivateIpAddress;
    assert.equal(fabric.calls.at(-1), `addressesAssigned ${inst.primaryEni.eniId} ${ip}`);
    const eni = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
      .NetworkInterface!;
    fabric.failOn.add('eniAttached');
    await assert.rejects(
      t.ec2.send(
        new AttachNetworkInterfaceCommand({
          NetworkInterfaceId: eni.NetworkInterfaceId!,
          InstanceId: inst.instanceId,
          DeviceIndex: 1,
        }),
      ),
      (e: unknown) => {
        const err = e as { name: string; $metadata: { httpStatusCode: number } };
        return err.name === 'InternalError' && err.$metadata.httpStatusCode === 500;
      },
    );
  } finally {
    await t.close();
  }
});
