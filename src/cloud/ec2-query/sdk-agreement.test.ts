// Our EC2 client and @aws-sdk/client-ec2 (kept as a devDependency for this) read the same
// emulator answers: the same ENIs, addresses, attachments, tags, subnets and instance type
// limits come out of both, so the reader does not drift from what EC2's own client makes of them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CreateNetworkInterfaceCommand,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance, RunningEmulator } from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { connectionTrackingParams } from '../aws/aws-connection-tracking.ts';
import { readNetworkInterface } from '../aws/aws-network-interface.ts';
import { Ec2QueryClient } from './ec2-query-client.ts';
import { HttpTransport } from './http-transport.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const CREDENTIALS = { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' };
let emu: RunningEmulator;
let node: LaunchedInstance;
let ours: Ec2QueryClient;
let sdk: EC2Client;

before(async () => {
  emu = await startEmulator({
    vpc: {
      vpcId: 'vpc-0agree',
      cidr: '10.2.0.0/16',
      region: 'us-west-2',
      subnets: [{ subnetId: 'subnet-0agree', cidr: '10.2.0.0/20', availabilityZone: 'us-west-2a' }],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(9),
    log: () => {},
  });
  node = await emu.launchInstance({
    instanceType: 'm5.large',
    subnetId: 'subnet-0agree',
    securityGroupIds: ['sg-0a'],
  });
  ours = new Ec2QueryClient({
    endpoint: new URL(emu.urls[0]!),
    region: 'us-west-2',
    credentials: { get: () => Promise.resolve(CREDENTIALS), invalidate: () => {} },
    transport: new HttpTransport(),
  });
  sdk = new EC2Client({ region: 'us-west-2', endpoint: emu.urls[0]!, credentials: CREDENTIALS });
});

after(async () => {
  ours?.close();
  sdk?.destroy();
  await emu?.close();
});

test('DescribeNetworkInterfaces: both clients read the same ENIs, addresses, prefixes, attachments and tags', async () => {
  const created = await ours.call('CreateNetworkInterface', {
    SubnetId: 'subnet-0agree',
    SecurityGroupId: ['sg-0a'],
    Description: 'agree & <check>',
    TagSpecification: [{ ResourceType: 'network-interface', Tag: [{ Key: 'team', Value: 'net "core"' }] }],
  });
  const eniId = created.child('networkInterface')?.string('networkInterfaceId') ?? '';
  await ours.call('AssignPrivateIpAddresses', {
    NetworkInterfaceId: eniId,
    SecondaryPrivateIpAddressCount: 2,
  });
  await ours.call('AttachNetworkInterface', {
    NetworkInterfaceId: eniId,
    InstanceId: node.instanceId,
    DeviceIndex: 1,
  });
  await ours.call('AssignPrivateIpAddresses', { NetworkInterfaceId: eniId, Ipv4PrefixCount: 1 });

  const filter = [{ Name: 'attachment.instance-id', Value: [node.instanceId] }];
  const mine = (await ours.call('DescribeNetworkInterfaces', { Filter: filter }))
    .items('networkInterfaceSet')
    .map(readNetworkInterface);
  const theirs = (
    await sdk.send(
      new DescribeNetworkInterfacesCommand({
        Filters: [{ Name: 'attachment.instance-id', Values: [node.instanceId] }],
      }),
    )
  ).NetworkInterfaces;
  assert.equal(mine.length, 2);
  assert.deepEqual(
    mine,
    (theirs ?? []).map((e) => ({
      networkInterfaceId: e.NetworkInterfaceId,
      subnetId: e.SubnetId,
      macAddress: e.MacAddress,
      privateIpAddress: e.PrivateIpAddress,
      ...(e.Description === undefined ? {} : { description: e.Description }),
      interfaceType: e.InterfaceType,
      attachment: { attachmentId: e.Attachment?.AttachmentId, deviceIndex: e.Attachment?.DeviceIndex },
      privateIpAddresses: (e.PrivateIpAddresses ?? []).map((a) => ({
        privateIpAddress: a.PrivateIpAddress,
        primary: a.Primary === true,
      })),
      ipv4Prefixes: (e.Ipv4Prefixes ?? []).map((p) => ({ ipv4Prefix: p.Ipv4Prefix })),
      ipv6Addresses: (e.Ipv6Addresses ?? []).map((a) => ({ ipv6Address: a.Ipv6Address })),
      ipv6Prefixes: (e.Ipv6Prefixes ?? []).map((p) => ({ ipv6Prefix: p.Ipv6Prefix })),
      tags: (e.TagSet ?? []).map((t) => ({ key: t.Key, value: t.Value })),
    })),
  );
  const attached = mine.find((e) => e.networkInterfaceId === eniId);
  assert.equal(attached?.description, 'agree & <check>');
  assert.deepEqual(attached?.tags, [{ key: 'team', value: 'net "core"' }]);
  assert.equal(attached?.privateIpAddresses.length, 3);
  assert.equal(attached?.ipv4Prefixes.length, 1);
});

test('DescribeSubnets and DescribeInstanceTypes: both clients read the same CIDR and limits', async () => {
  const subnet = (await ours.call('DescribeSubnets', { SubnetId: ['subnet-0agree'] })).items('subnetSet')[0];
  const sdkSubnet = (await sdk.send(new DescribeSubnetsCommand({ SubnetIds: ['subnet-0agree'] })))
    .Subnets?.[0];
  assert.equal(subnet?.string('cidrBlock'), sdkSubnet?.CidrBlock);
  assert.equal(subnet?.string('cidrBlock'), '10.2.0.0/20');

  const info = (await ours.call('DescribeInstanceTypes', { InstanceType: ['m5.4xlarge'] }))
    .items('instanceTypeSet')[0]
    ?.child('networkInfo');
  const sdkInfo = (await sdk.send(new DescribeInstanceTypesCommand({ InstanceTypes: ['m5.4xlarge'] })))
    .InstanceTypes?.[0]?.NetworkInfo;
  assert.deepEqual(
    [info?.int('maximumNetworkInterfaces'), info?.int('ipv4AddressesPerInterface')],
    [sdkInfo?.MaximumNetworkInterfaces, sdkInfo?.Ipv4AddressesPerInterface],
  );
  assert.ok((sdkInfo?.MaximumNetworkInterfaces ?? 0) > 0);
});

test("connection tracking: the SDK's CreateNetworkInterface is understood and both clients read the same timeouts back", async () => {
  // The SDK serializes ConnectionTrackingSpecification with EC2's own wire names: the emulator
  // taking them, and our reader and the SDK agreeing on the describe, holds both ends to EC2's.
  const byTheSdk = await sdk.send(
    new CreateNetworkInterfaceCommand({
      SubnetId: 'subnet-0agree',
      ConnectionTrackingSpecification: { TcpEstablishedTimeout: 7200, UdpStreamTimeout: 150 },
    }),
  );
  const byUs = await ours.call('CreateNetworkInterface', {
    SubnetId: 'subnet-0agree',
    ConnectionTrackingSpecification: connectionTrackingParams({
      tcpEstablishedTimeout: 7200,
      udpStreamTimeout: 150,
    }),
  });
  const ids = [
    byTheSdk.NetworkInterface?.NetworkInterfaceId ?? '',
    byUs.child('networkInterface')?.string('networkInterfaceId') ?? '',
  ];
  const mine = (await ours.call('DescribeNetworkInterfaces', { NetworkInterfaceId: ids }))
    .items('networkInterfaceSet')
    .map(readNetworkInterface);
  const theirs = (await sdk.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ids })))
    .NetworkInterfaces;
  assert.equal(mine.length, 2);
  for (const [i, eni] of mine.entries()) {
    const sdkSide = theirs?.[i]?.ConnectionTrackingConfiguration;
    assert.deepEqual(eni.connectionTracking, { tcpEstablishedTimeout: 7200, udpStreamTimeout: 150 });
    assert.deepEqual(
      { tcpEstablishedTimeout: sdkSide?.TcpEstablishedTimeout, udpStreamTimeout: sdkSide?.UdpStreamTimeout },
      eni.connectionTracking,
    );
  }
});
