// Describe actions through the real @aws-sdk/client-ec2 client.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type _InstanceType,
  AssignPrivateIpAddressesCommand,
  CreateNetworkInterfaceCommand,
  DescribeInstancesCommand,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  paginateDescribeNetworkInterfaces,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance } from '../api.ts';
import { SUBNET_A, SUBNET_SMALL, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
let one: LaunchedInstance;
let two: LaunchedInstance;
before(async () => {
  t = await startTestEmulator();
  one = await t.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: SUBNET_A,
    securityGroupIds: ['sg-1'],
  });
  two = await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_SMALL });
});
after(() => t.close());

function codeOf(err: unknown): string | undefined {
  return (err as { name?: string }).name;
}

test('DescribeInstances with an instance-id filter returns that instance with its ENIs', async () => {
  const out = await t.ec2.send(
    new DescribeInstancesCommand({ Filters: [{ Name: 'instance-id', Values: [one.instanceId] }] }),
  );
  const instances = out.Reservations?.flatMap((r) => r.Instances ?? []) ?? [];
  assert.equal(instances.length, 1);
  const i = instances[0]!;
  assert.equal(i.InstanceId, one.instanceId);
  assert.equal(i.InstanceType, 'm5.large');
  assert.equal(i.State?.Name, 'running');
  assert.equal(i.PrivateIpAddress, one.primaryEni.primaryIp);
  assert.equal(i.Placement?.AvailabilityZone, 'us-west-2a');
  assert.deepEqual(
    i.SecurityGroups?.map((g) => g.GroupId),
    ['sg-1'],
  );
  assert.deepEqual(
    i.NetworkInterfaces?.map((n) => [n.NetworkInterfaceId, n.Attachment?.DeviceIndex, n.MacAddress]),
    [[one.primaryEni.eniId, 0, one.primaryEni.mac]],
  );
});

test('DescribeInstances of an unknown InstanceId fails with InvalidInstanceID.NotFound', async () => {
  await assert.rejects(
    t.ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-00000000000000000'] })),
    (e) => codeOf(e) === 'InvalidInstanceID.NotFound',
  );
});

test('DescribeInstanceTypes reports the ENI and per-ENI address limits of every supported type', async () => {
  const expected: Record<string, [number, number]> = {
    't3.medium': [3, 6],
    't3.large': [3, 12],
    'm5.large': [3, 10],
    'm5.xlarge': [4, 15],
    'm5.2xlarge': [4, 15],
    'm5.4xlarge': [8, 30],
    'c5.large': [3, 10],
  };
  const out = await t.ec2.send(
    new DescribeInstanceTypesCommand({ InstanceTypes: Object.keys(expected) as _InstanceType[] }),
  );
  const got = Object.fromEntries(
    (out.InstanceTypes ?? []).map((x) => [
      x.InstanceType,
      [x.NetworkInfo?.MaximumNetworkInterfaces, x.NetworkInfo?.Ipv4AddressesPerInterface],
    ]),
  );
  assert.deepEqual(got, expected);
});

test('DescribeInstanceTypes of an unknown type fails with InvalidInstanceType', async () => {
  await assert.rejects(
    t.ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ['z9.nano' as _InstanceType] })),
    (e) => codeOf(e) === 'InvalidInstanceType',
  );
});

test('DescribeSubnets reports CIDR, AZ and the free address count', async () => {
  const out = await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [SUBNET_SMALL] }));
  const s = out.Subnets?.[0];
  assert.equal(s?.CidrBlock, '10.0.1.0/28');
  assert.equal(s?.AvailabilityZone, 'us-west-2a');
  assert.equal(s?.VpcId, 'vpc-0123456789abcdef0');
  // 16 - 5 reserved - the primary address of instance two
  assert.equal(s?.AvailableIpAddressCount, 10);
  await assert.rejects(
    t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: ['subnet-00000000000000000'] })),
    (e) => codeOf(e) === 'InvalidSubnetID.NotFound',
  );
});

test('DescribeNetworkInterfaces filters by attachment.instance-id, subnet-id and status', async () => {
  const byInstance = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({
      Filters: [{ Name: 'attachment.instance-id', Values: [two.instanceId] }],
    }),
  );
  assert.deepEqual(
    byInstance.NetworkInterfaces?.map((n) => n.NetworkInterfaceId),
    [two.primaryEni.eniId],
  );
  const loose = (await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_SMALL })))
    .NetworkInterface!;
  const available = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({
      Filters: [
        { Name: 'subnet-id', Values: [SUBNET_SMALL] },
        { Name: 'status', Values: ['available'] },
      ],
    }),
  );
  assert.deepEqual(
    available.NetworkInterfaces?.map((n) => n.NetworkInterfaceId),
    [loose.NetworkInterfaceId],
  );
  const byId = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({
      Filters: [{ Name: 'network-interface-id', Values: [one.primaryEni.eniId, loose.NetworkInterfaceId!] }],
    }),
  );
  assert.equal(byId.NetworkInterfaces?.length, 2);
});

test('DescribeNetworkInterfaces shows secondary addresses with primary=false', async () => {
  await t.ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: one.primaryEni.eniId,
      SecondaryPrivateIpAddressCount: 2,
    }),
  );
  const out = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [one.primaryEni.eniId] }),
  );
  const addrs = out.NetworkInterfaces?.[0]?.PrivateIpAddresses ?? [];
  assert.deepEqual(
    addrs.map((a) => a.Primary),
    [true, false, false],
  );
  assert.equal(addrs[0]?.PrivateIpAddress, one.primaryEni.primaryIp);
});

test('DescribeNetworkInterfaces with an unknown filter fails with InvalidParameterValue', async () => {
  await assert.rejects(
    t.ec2.send(new DescribeNetworkInterfacesCommand({ Filters: [{ Name: 'colour', Values: ['red'] }] })),
    (e) => codeOf(e) === 'InvalidParameterValue',
  );
});

test('DescribeNetworkInterfaces pages with MaxResults/NextToken through the SDK paginator', async () => {
  for (let i = 0; i < 7; i++) await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A }));
  const all = (await t.ec2.send(new DescribeNetworkInterfacesCommand({}))).NetworkInterfaces ?? [];
  const pages: number[] = [];
  const paged: string[] = [];
  for await (const page of paginateDescribeNetworkInterfaces({ client: t.ec2, pageSize: 5 }, {})) {
    pages.push(page.NetworkInterfaces?.length ?? 0);
    paged.push(...(page.NetworkInterfaces ?? []).map((n) => n.NetworkInterfaceId!));
  }
  assert.ok(all.length >= 10);
  assert.equal(pages.length, Math.ceil(all.length / 5));
  assert.ok(pages.slice(0, -1).every((n) => n === 5));
  assert.deepEqual(
    paged,
    all.map((n) => n.NetworkInterfaceId),
  );
  await assert.rejects(
    t.ec2.send(new DescribeNetworkInterfacesCommand({ MaxResults: 2 })),
    (e) => codeOf(e) === 'InvalidParameterValue',
  );
});
