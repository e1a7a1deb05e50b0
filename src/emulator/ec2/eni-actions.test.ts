// ENI actions through the real @aws-sdk/client-ec2 client: its serializer builds the requests,
// its XML parser reads the replies.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  CreateTagsCommand,
  DeleteNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  DetachNetworkInterfaceCommand,
  ModifyNetworkInterfaceAttributeCommand,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance } from '../api.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function rejectsWith(p: Promise<unknown>, code: string, status: number): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    assert.equal(e.name, code);
    assert.equal(e.$metadata?.httpStatusCode, status);
    return true;
  });
}

async function describe(eniId: string) {
  const out = await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }));
  return out.NetworkInterfaces![0]!;
}

function launch(instanceType = 'm5.large'): Promise<LaunchedInstance> {
  return t.emulator.launchInstance({ instanceType, subnetId: SUBNET_A });
}

test('CreateNetworkInterface returns the new ENI with its SGs, description and tags', async () => {
  const out = await t.ec2.send(
    new CreateNetworkInterfaceCommand({
      SubnetId: SUBNET_A,
      Description: 'vpcnet secondary',
      Groups: ['sg-0a', 'sg-0b'],
      TagSpecifications: [{ ResourceType: 'network-interface', Tags: [{ Key: 'cluster', Value: 'lab' }] }],
    }),
  );
  const eni = out.NetworkInterface!;
  assert.match(eni.NetworkInterfaceId!, /^eni-[0-9a-f]{17}$/);
  assert.match(eni.MacAddress!, /^02:/);
  assert.equal(eni.Status, 'available');
  assert.equal(eni.Description, 'vpcnet secondary');
  assert.deepEqual(
    eni.Groups?.map((g) => g.GroupId),
    ['sg-0a', 'sg-0b'],
  );
  assert.deepEqual(eni.TagSet, [{ Key: 'cluster', Value: 'lab' }]);
  assert.deepEqual(eni.PrivateIpAddresses, [
    { PrivateIpAddress: eni.PrivateIpAddress, Primary: true, PrivateDnsName: eni.PrivateDnsName },
  ]);
  assert.equal(eni.SubnetId, SUBNET_A);
  assert.equal(eni.VpcId, 'vpc-0123456789abcdef0');
});

test('CreateNetworkInterface in an unknown subnet fails with InvalidSubnetID.NotFound', async () => {
  await rejectsWith(
    t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: 'subnet-00000000000000000' })),
    'InvalidSubnetID.NotFound',
    400,
  );
});

test('AttachNetworkInterface returns an attachment ID that Describe then shows', async () => {
  const inst = await launch();
  const eni = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A }))).NetworkInterface!;
  const out = await t.ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: eni.NetworkInterfaceId!,
      InstanceId: inst.instanceId,
      DeviceIndex: 1,
    }),
  );
  assert.match(out.AttachmentId!, /^eni-attach-[0-9a-f]{17}$/);
  const seen = await describe(eni.NetworkInterfaceId!);
  assert.equal(seen.Status, 'in-use');
  assert.equal(seen.Attachment?.AttachmentId, out.AttachmentId);
  assert.equal(seen.Attachment?.InstanceId, inst.instanceId);
  assert.equal(seen.Attachment?.DeviceIndex, 1);
  assert.equal(seen.Attachment?.Status, 'attached');
  assert.equal(seen.Attachment?.DeleteOnTermination, false);
  assert.ok(seen.Attachment?.AttachTime instanceof Date);
});

test('AttachNetworkInterface past the ENI limit fails with AttachmentLimitExceeded', async () => {
  const inst = await launch('t3.medium');
  for (const DeviceIndex of [1, 2]) {
    const eni = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
      .NetworkInterface!;
    await t.ec2.send(
      new AttachNetworkInterfaceCommand({
        NetworkInterfaceId: eni.NetworkInterfaceId!,
        InstanceId: inst.instanceId,
        DeviceIndex,
      }),
    );
  }
  const extra = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
    .NetworkInterface!;
  await rejectsWith(
    t.ec2.send(
      new AttachNetworkInterfaceCommand({
        NetworkInterfaceId: extra.NetworkInterfaceId!,
        InstanceId: inst.instanceId,
        DeviceIndex: 3,
      }),
    ),
    'AttachmentLimitExceeded',
    400,
  );
});

test('AttachNetworkInterface to an unknown instance fails with InvalidInstanceID.NotFound', async () => {
  const eni = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A }))).NetworkInterface!;
  await rejectsWith(
    t.ec2.send(
      new AttachNetworkInterfaceCommand({
        NetworkInterfaceId: eni.NetworkInterfaceId!,
        InstanceId: 'i-00000000000000000',
        DeviceIndex: 1,
      }),
    ),
    'InvalidInstanceID.NotFound',
    400,
  );
});

test('ModifyNetworkInterfaceAttribute sets DeleteOnTermination on the attachment', async () => {
  const inst = await launch();
  const eni = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A }))).NetworkInterface!;
  const eniId = eni.NetworkInterfaceId!;
  const { AttachmentId } = await t.ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: eniId,
      InstanceId: inst.instanceId,
      DeviceIndex: 1,
    }),
  );
  await t.ec2.send(
    new ModifyNetworkInterfaceAttributeCommand({
      NetworkInterfaceId: eniId,
      Attachment: { AttachmentId: AttachmentId!, DeleteOnTermination: true },
    }),
  );
  assert.equal((await describe(eniId)).Attachment?.DeleteOnTermination, true);
  await rejectsWith(
    t.ec2.send(
      new ModifyNetworkInterfaceAttributeCommand({
        NetworkInterfaceId: eniId,
        Attachment: { AttachmentId: 'eni-attach-00000000000000000', DeleteOnTermination: true },
      }),
    ),
    'InvalidAttachmentID.NotFound',
    400,
  );
});

test('DeleteNetworkInterface refuses an attached ENI, then deletes it once detached', async () => {
  const inst = await launch();
  const eniId = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
    .NetworkInterface!.NetworkInterfaceId!;
  const { AttachmentId } = await t.ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: eniId,
      InstanceId: inst.instanceId,
      DeviceIndex: 2,
    }),
  );
  await rejectsWith(
    t.ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId })),
    'InvalidParameterValue',
    400,
  );
  await t.ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: AttachmentId!, Force: true }));
  assert.equal((await describe(eniId)).Status, 'available');
  await t.ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId }));
  await rejectsWith(
    t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] })),
    'InvalidNetworkInterfaceID.NotFound',
    400,
  );
});

test('DetachNetworkInterface of an unknown attachment fails with InvalidAttachmentID.NotFound', async () => {
  await rejectsWith(
    t.ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: 'eni-attach-00000000000000000' })),
    'InvalidAttachmentID.NotFound',
    400,
  );
});

test('AssignPrivateIpAddresses by count returns fresh addresses that Describe lists as secondaries', async () => {
  const inst = await launch();
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: inst.primaryEni.eniId,
      SecondaryPrivateIpAddressCount: 4,
    }),
  );
  const ips = out.AssignedPrivateIpAddresses!.map((a) => a.PrivateIpAddress!);
  assert.equal(ips.length, 4);
  assert.equal(out.NetworkInterfaceId, inst.primaryEni.eniId);
  const seen = await describe(inst.primaryEni.eniId);
  assert.deepEqual(
    seen.PrivateIpAddresses!.filter((a) => a.Primary === false).map((a) => a.PrivateIpAddress),
    ips,
  );
  assert.ok(!ips.includes(inst.primaryEni.primaryIp));
});

test('AssignPrivateIpAddresses past ipsPerEni fails with PrivateIpAddressLimitExceeded', async () => {
  const inst = await launch('m5.large');
  await rejectsWith(
    t.ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: inst.primaryEni.eniId,
        SecondaryPrivateIpAddressCount: 10,
      }),
    ),
    'PrivateIpAddressLimitExceeded',
    400,
  );
  await t.ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: inst.primaryEni.eniId,
      SecondaryPrivateIpAddressCount: 9,
    }),
  );
});

test('UnassignPrivateIpAddresses removes exactly the given addresses', async () => {
  const inst = await launch();
  const eniId = inst.primaryEni.eniId;
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, SecondaryPrivateIpAddressCount: 3 }),
  );
  const [a, b, c] = out.AssignedPrivateIpAddresses!.map((x) => x.PrivateIpAddress!);
  await t.ec2.send(
    new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [a!, c!] }),
  );
  const left = (await describe(eniId)).PrivateIpAddresses!.map((x) => x.PrivateIpAddress);
  assert.deepEqual(left, [inst.primaryEni.primaryIp, b]);
  await rejectsWith(
    t.ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [a!] }),
    ),
    'InvalidParameterValue',
    400,
  );
});

test('CreateTags adds tags that the tag:KEY filter finds', async () => {
  const eniId = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A })))
    .NetworkInterface!.NetworkInterfaceId!;
  await t.ec2.send(
    new CreateTagsCommand({
      Resources: [eniId],
      Tags: [{ Key: 'node.k8s.amazonaws.com/instance_id', Value: 'i-abc' }],
    }),
  );
  const out = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({
      Filters: [{ Name: 'tag:node.k8s.amazonaws.com/instance_id', Values: ['i-abc'] }],
    }),
  );
  assert.deepEqual(
    out.NetworkInterfaces?.map((n) => n.NetworkInterfaceId),
    [eniId],
  );
  await rejectsWith(
    t.ec2.send(
      new CreateTagsCommand({ Resources: ['eni-00000000000000000'], Tags: [{ Key: 'k', Value: 'v' }] }),
    ),
    'InvalidNetworkInterfaceID.NotFound',
    400,
  );
});

test('ModifyNetworkInterfaceAttribute replaces the security groups and the description', async () => {
  const eniId = (
    await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, Groups: ['sg-old'] }))
  ).NetworkInterface!.NetworkInterfaceId!;
  await t.ec2.send(
    new ModifyNetworkInterfaceAttributeCommand({ NetworkInterfaceId: eniId, Groups: ['sg-n1', 'sg-n2'] }),
  );
  await t.ec2.send(
    new ModifyNetworkInterfaceAttributeCommand({
      NetworkInterfaceId: eniId,
      Description: { Value: 'renamed' },
    }),
  );
  const seen = await describe(eniId);
  assert.deepEqual(
    seen.Groups?.map((g) => g.GroupId),
    ['sg-n1', 'sg-n2'],
  );
  assert.equal(seen.Description, 'renamed');
});

test('concurrent AssignPrivateIpAddresses calls never hand out one address twice', async () => {
  const instances = await Promise.all([launch('m5.4xlarge'), launch('m5.4xlarge'), launch('m5.4xlarge')]);
  const calls = instances.flatMap((inst) =>
    Array.from({ length: 9 }, () =>
      t.ec2.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: inst.primaryEni.eniId,
          SecondaryPrivateIpAddressCount: 3,
        }),
      ),
    ),
  );
  const replies = await Promise.all(calls);
  const ips = replies.flatMap((r) => r.AssignedPrivateIpAddresses!.map((a) => a.PrivateIpAddress!));
  assert.equal(ips.length, 81);
  assert.equal(new Set(ips).size, 81);
  const primaries = new Set(instances.map((i) => i.primaryEni.primaryIp));
  assert.ok(ips.every((ip) => !primaries.has(ip)));
});

test('CreateNetworkInterface repeated with the same ClientToken returns the same ENI', async () => {
  const first = await t.ec2.send(
    new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, ClientToken: 'tok-1' }),
  );
  const again = await t.ec2.send(
    new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, ClientToken: 'tok-1' }),
  );
  const other = await t.ec2.send(
    new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, ClientToken: 'tok-2' }),
  );
  assert.equal(again.NetworkInterface?.NetworkInterfaceId, first.NetworkInterface?.NetworkInterfaceId);
  assert.notEqual(other.NetworkInterface?.NetworkInterfaceId, first.NetworkInterface?.NetworkInterfaceId);
});
