// Trunk and branch ENIs through the real @aws-sdk/client-ec2 client, and their fabric hooks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AssociateTrunkInterfaceCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  DeleteNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  DescribeTrunkInterfaceAssociationsCommand,
  DisassociateTrunkInterfaceCommand,
} from '@aws-sdk/client-ec2';
import type { Fabric, FabricEni } from '../api.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

class BranchRecorder implements Fabric {
  readonly calls: string[] = [];
  failBranch = false;
  eniAttached(_n: string, i: number, e: FabricEni) {
    this.calls.push(`attached ${i} ${e.eniId}`);
    return Promise.resolve();
  }
  eniDetached(_n: string, i: number, e: FabricEni) {
    this.calls.push(`detached ${i} ${e.eniId}`);
    return Promise.resolve();
  }
  addressesAssigned() {
    return Promise.resolve();
  }
  addressesUnassigned() {
    return Promise.resolve();
  }
  branchAssociated(trunk: FabricEni, vlan: number, branch: FabricEni) {
    this.calls.push(`branch+ ${trunk.eniId} ${vlan} ${branch.eniId}`);
    return this.failBranch ? Promise.reject(new Error('no vlan')) : Promise.resolve();
  }
  branchDisassociated(trunk: FabricEni, vlan: number, branch: FabricEni) {
    this.calls.push(`branch- ${trunk.eniId} ${vlan} ${branch.eniId}`);
    return Promise.resolve();
  }
}

function codeOf(e: unknown): string | undefined {
  return (e as { name?: string }).name;
}

async function node(t: TestEmulator) {
  const inst = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, netns: 'n1' });
  const trunk = (
    await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, InterfaceType: 'trunk' }))
  ).NetworkInterface!;
  await t.ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: trunk.NetworkInterfaceId!,
      InstanceId: inst.instanceId,
      DeviceIndex: 1,
    }),
  );
  const branch = (
    await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, Groups: ['sg-pod'] }))
  ).NetworkInterface!;
  return { inst, trunkId: trunk.NetworkInterfaceId!, branchId: branch.NetworkInterfaceId! };
}

test('a branch ENI associated with a trunk gets a VLAN that DescribeTrunkInterfaceAssociations lists', async () => {
  const fabric = new BranchRecorder();
  const t = await startTestEmulator({ fabric });
  try {
    const { trunkId, branchId } = await node(t);
    const trunk = await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [trunkId] }));
    assert.equal(trunk.NetworkInterfaces?.[0]?.InterfaceType, 'trunk');
    const out = await t.ec2.send(
      new AssociateTrunkInterfaceCommand({
        BranchInterfaceId: branchId,
        TrunkInterfaceId: trunkId,
        VlanId: 7,
      }),
    );
    const assoc = out.InterfaceAssociation!;
    assert.match(assoc.AssociationId!, /^trunk-assoc-[0-9a-f]{17}$/);
    assert.deepEqual(
      [assoc.BranchInterfaceId, assoc.TrunkInterfaceId, assoc.VlanId, assoc.InterfaceProtocol],
      [branchId, trunkId, 7, 'VLAN'],
    );
    assert.equal(fabric.calls.at(-1), `branch+ ${trunkId} 7 ${branchId}`);
    const listed = await t.ec2.send(
      new DescribeTrunkInterfaceAssociationsCommand({
        Filters: [{ Name: 'trunk-interface-association.trunk-interface-id', Values: [trunkId] }],
      }),
    );
    assert.deepEqual(
      listed.InterfaceAssociations?.map((a) => [a.AssociationId, a.VlanId]),
      [[assoc.AssociationId, 7]],
    );
    await assert.rejects(
      t.ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: branchId })),
      (e) => codeOf(e) === 'InvalidParameterValue',
    );
    await t.ec2.send(new DisassociateTrunkInterfaceCommand({ AssociationId: assoc.AssociationId! }));
    assert.equal(fabric.calls.at(-1), `branch- ${trunkId} 7 ${branchId}`);
    await t.ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: branchId }));
    await assert.rejects(
      t.ec2.send(new DisassociateTrunkInterfaceCommand({ AssociationId: assoc.AssociationId! })),
      (e) => codeOf(e) === 'InvalidAssociationID.NotFound',
    );
  } finally {
    await t.close();
  }
});

test('association refuses a non-trunk, a VLAN in use and a bad VLAN ID with InvalidParameterValue', async () => {
  const t = await startTestEmulator();
  try {
    const { inst, trunkId, branchId } = await node(t);
    const other = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
      .NetworkInterface!.NetworkInterfaceId!;
    const tries = [
      { BranchInterfaceId: branchId, TrunkInterfaceId: inst.primaryEni.eniId, VlanId: 1 },
      { BranchInterfaceId: branchId, TrunkInterfaceId: trunkId, VlanId: 4095 },
    ];
    for (const input of tries) {
      await assert.rejects(
        t.ec2.send(new AssociateTrunkInterfaceCommand(input)),
        (e) => codeOf(e) === 'InvalidParameterValue',
      );
    }
    await t.ec2.send(
      new AssociateTrunkInterfaceCommand({
        BranchInterfaceId: branchId,
        TrunkInterfaceId: trunkId,
        VlanId: 1,
      }),
    );
    await assert.rejects(
      t.ec2.send(
        new AssociateTrunkInterfaceCommand({
          BranchInterfaceId: other,
          TrunkInterfaceId: trunkId,
          VlanId: 1,
        }),
      ),
      (e) => codeOf(e) === 'InvalidParameterValue',
    );
  } finally {
    await t.close();
  }
});

test('a failing branch hook leaves the branch unassociated; terminate removes branches before the trunk', async () => {
  const fabric = new BranchRecorder();
  const t = await startTestEmulator({ fabric });
  try {
    const { inst, trunkId, branchId } = await node(t);
    fabric.failBranch = true;
    await assert.rejects(
      t.ec2.send(
        new AssociateTrunkInterfaceCommand({
          BranchInterfaceId: branchId,
          TrunkInterfaceId: trunkId,
          VlanId: 3,
        }),
      ),
      (e) => codeOf(e) === 'InternalError',
    );
    const listed = await t.ec2.send(new DescribeTrunkInterfaceAssociationsCommand({}));
    assert.deepEqual(listed.InterfaceAssociations, []);
    fabric.failBranch = false;
    await t.ec2.send(
      new AssociateTrunkInterfaceCommand({
        BranchInterfaceId: branchId,
        TrunkInterfaceId: trunkId,
        VlanId: 3,
      }),
    );
    fabric.calls.length = 0;
    await t.emulator.terminateInstance(inst.instanceId);
    assert.deepEqual(fabric.calls, [
      `branch- ${trunkId} 3 ${branchId}`,
      `detached 1 ${trunkId}`,
      `detached 0 ${inst.primaryEni.eniId}`,
    ]);
    const branch = await t.ec2.send(
      new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [branchId] }),
    );
    assert.equal(branch.NetworkInterfaces?.[0]?.Status, 'available');
  } finally {
    await t.close();
  }
});
