// The AWS driver against the real emulator, in-process: the same EC2 Query API calls and IMDS
// requests the agent makes in production, over HTTP. The SDK (a devDependency) checks from the
// other side what EC2 now holds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CreateNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance, RunningEmulator, VpcSpec } from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { CloudError } from '../cloud.ts';
import { ImdsClient, ImdsError } from '../imds.ts';
import type { AwsCloud } from './aws.ts';
import { createAwsCloud } from './create-aws-cloud.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'; // the SDK used for cross-checks

const VPC: VpcSpec = {
  vpcId: 'vpc-0cafe',
  cidr: '10.0.0.0/16',
  region: 'us-west-2',
  subnets: [
    { subnetId: 'subnet-0a', cidr: '10.0.0.0/20', availabilityZone: 'us-west-2a' },
    { subnetId: 'subnet-0b', cidr: '10.0.16.0/20', availabilityZone: 'us-west-2a' },
  ],
};
const NODE_SGS = ['sg-0node'];
const CREDENTIALS = { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' };

function inCidr(ip: string, cidr: string): boolean {
  const toInt = (a: string) => a.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(base) / size);
}

describe('AwsCloud against the emulator', () => {
  let emu: RunningEmulator;
  let node: LaunchedInstance;
  let cloud: AwsCloud;
  /** One line per EC2 call the emulator answered: lets a test count the attempts. */
  const ec2Calls: { action: unknown; status: unknown; code: unknown }[] = [];

  const connect = () =>
    createAwsCloud({
      region: VPC.region,
      ec2Endpoint: emu.urls[0]!,
      imds: { endpoint: emu.urls[0]! },
      credentials: CREDENTIALS,
    });
  const callsOf = (action: string) => ec2Calls.filter((c) => c.action === action);

  before(async () => {
    emu = await startEmulator({
      vpc: VPC,
      listen: [{ host: '127.0.0.1', port: 0 }],
      imdsFallbackInstance: () => node?.instanceId,
      random: seededRandom(1644),
      log: (line) => {
        if (line.msg === 'ec2') ec2Calls.push({ action: line.action, status: line.status, code: line.code });
      },
    });
    node = await emu.launchInstance({
      instanceType: 'm5.large',
      subnetId: 'subnet-0a',
      securityGroupIds: NODE_SGS,
    });
    cloud = await connect();
  });

  after(async () => {
    cloud?.close();
    await emu?.close();
  });

  test('metadata() describes the instance and its primary ENI from IMDS', async () => {
    assert.deepEqual(await cloud.metadata(), {
      instanceId: node.instanceId,
      instanceType: 'm5.large',
      region: 'us-west-2',
      availabilityZone: 'us-west-2a',
      primaryMac: node.primaryEni.mac,
      primaryIp: node.primaryEni.primaryIp,
      subnetId: 'subnet-0a',
      subnetCidr: '10.0.0.0/20',
      vpcId: VPC.vpcId,
      vpcCidrs: ['10.0.0.0/16'],
      securityGroupIds: NODE_SGS,
    });
  });

  test('endpoints come from AWS_ENDPOINT_URL_EC2 and AWS_EC2_METADATA_SERVICE_ENDPOINT, the region from IMDS', async () => {
    const fromEnv = await createAwsCloud({
      credentials: CREDENTIALS,
      env: { AWS_ENDPOINT_URL_EC2: emu.urls[0]!, AWS_EC2_METADATA_SERVICE_ENDPOINT: emu.urls[0]! },
    });
    try {
      assert.equal((await fromEnv.metadata()).instanceId, node.instanceId);
      const enis = await fromEnv.describeInstanceEnis(node.instanceId);
      assert.deepEqual(
        enis.map((e) => e.eniId),
        [node.primaryEni.eniId],
      );
    } finally {
      fromEnv.close();
    }
  });

  test('IMDS: a token the emulator has expired is replaced after its 401 and the read succeeds', async () => {
    // A frozen clock makes the client trust its 1 s token; the emulator's own clock expires it.
    const imds = new ImdsClient({ endpoint: emu.urls[0]!, tokenTtlSeconds: 1, now: () => 0 });
    assert.equal(await imds.get('instance-id'), node.instanceId);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal(await imds.get('instance-id'), node.instanceId);
    const missing = await imds.get('no/such/path').catch((e: unknown) => e);
    assert.ok(missing instanceof ImdsError);
    assert.equal(missing.status, 404);
  });

  test('a freshly launched instance has one ENI, the primary, at device 0 with no secondary IPs', async () => {
    const enis = await cloud.describeInstanceEnis(node.instanceId);
    assert.equal(enis.length, 1);
    const [primary] = enis;
    assert.equal(primary?.eniId, node.primaryEni.eniId);
    assert.equal(primary?.mac, node.primaryEni.mac);
    assert.equal(primary?.deviceNumber, 0);
    assert.match(primary?.attachmentId ?? '', /^eni-attach-/);
    assert.equal(primary?.subnetId, 'subnet-0a');
    assert.equal(primary?.subnetCidr, '10.0.0.0/20');
    assert.equal(primary?.primaryIp, node.primaryEni.primaryIp);
    assert.deepEqual(primary?.secondaryIps, []);
  });

  test('instance type limits come from DescribeInstanceTypes and are asked once', async () => {
    assert.deepEqual(await cloud.instanceTypeLimits('m5.4xlarge'), { maxEnis: 8, ipsPerEni: 30 });
    const asked = callsOf('DescribeInstanceTypes').length;
    assert.deepEqual(await cloud.instanceTypeLimits('m5.4xlarge'), { maxEnis: 8, ipsPerEni: 30 });
    assert.equal(callsOf('DescribeInstanceTypes').length, asked);
  });

  test('an unknown instance type is a non-retryable CloudError, and is asked again next time', async () => {
    for (let i = 0; i < 2; i++) {
      const err = await cloud.instanceTypeLimits('z9.nonexistent').catch((e: unknown) => e);
      assert.ok(err instanceof CloudError);
      assert.equal(err.code, 'InvalidInstanceType');
      assert.equal(err.retryable, false);
      assert.match(err.message, /^cannot describe instance type z9\.nonexistent: InvalidInstanceType: /);
    }
    assert.equal(callsOf('DescribeInstanceTypes').filter((c) => c.code === 'InvalidInstanceType').length, 2);
  });

  test('assigned secondary IPs show up on the ENI, and unassigned ones go away', async () => {
    const eniId = node.primaryEni.eniId;
    const ips = await cloud.assignPrivateIps(eniId, 3);
    assert.equal(ips.length, 3);
    assert.equal(new Set(ips).size, 3);
    for (const ip of ips) {
      assert.ok(inCidr(ip, '10.0.0.0/20'), `${ip} in the ENI's subnet`);
      assert.notEqual(ip, node.primaryEni.primaryIp);
    }
    const primary = () =>
      cloud.describeInstanceEnis(node.instanceId).then((e) => e.find((x) => x.eniId === eniId));
    assert.deepEqual([...((await primary())?.secondaryIps ?? [])].sort(), [...ips].sort());

    await cloud.unassignPrivateIps(eniId, ips.slice(0, 2));
    assert.deepEqual((await primary())?.secondaryIps, ips.slice(2));
    await cloud.unassignPrivateIps(eniId, ips.slice(2));
    assert.deepEqual((await primary())?.secondaryIps, []);
  });

  test('a created ENI, attached with DeleteOnTermination, is listed at its device index with its description', async () => {
    const created = await cloud.createEni('subnet-0b', NODE_SGS, 'vpcnet test ENI', {
      'vpcnet/node': node.instanceId,
    });
    assert.match(created.eniId, /^eni-/);
    assert.ok(inCidr(created.primaryIp, '10.0.16.0/20'));
    const attachmentId = await cloud.attachEni(created.eniId, node.instanceId, 1);
    await cloud.setDeleteOnTermination(created.eniId, attachmentId);

    const enis = await cloud.describeInstanceEnis(node.instanceId);
    assert.deepEqual(
      enis.map((e) => e.deviceNumber),
      [0, 1],
    );
    assert.deepEqual(enis[1], {
      eniId: created.eniId,
      mac: created.mac,
      deviceNumber: 1,
      attachmentId,
      subnetId: 'subnet-0b',
      subnetCidr: '10.0.16.0/20',
      primaryIp: created.primaryIp,
      secondaryIps: [],
      description: 'vpcnet test ENI',
      interfaceType: 'interface',
      tags: { 'vpcnet/node': node.instanceId },
    });

    // What EC2 itself now says about the attachment and the tags we asked for.
    const ec2 = new EC2Client({ region: VPC.region, endpoint: emu.urls[0]!, credentials: CREDENTIALS });
    try {
      const raw = await ec2.send(
        new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [created.eniId] }),
      );
      const eni = raw.NetworkInterfaces?.[0];
      assert.equal(eni?.Attachment?.DeleteOnTermination, true);
      assert.equal(eni?.Description, 'vpcnet test ENI');
      assert.deepEqual(eni?.TagSet, [{ Key: 'vpcnet/node', Value: node.instanceId }]);
      assert.deepEqual(
        eni?.Groups?.map((g) => g.GroupId),
        NODE_SGS,
      );
    } finally {
      ec2.destroy();
    }
  });

  test('an ENI reports its interface type and tags from DescribeNetworkInterfaces (a trunk, a no_manage tag)', async () => {
    const other = await emu.launchInstance({ instanceType: 'm5.large', subnetId: 'subnet-0a' });
    const ec2 = new EC2Client({ region: VPC.region, endpoint: emu.urls[0]!, credentials: CREDENTIALS });
    try {
      const create = async (interfaceType: 'trunk' | undefined, tags: Record<string, string>) => {
        const reply = await ec2.send(
          new CreateNetworkInterfaceCommand({
            SubnetId: 'subnet-0a',
            ...(interfaceType === undefined ? {} : { InterfaceType: interfaceType }),
            TagSpecifications: [
              {
                ResourceType: 'network-interface',
                Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
              },
            ],
          }),
        );
        return reply.NetworkInterface?.NetworkInterfaceId ?? '';
      };
      const trunk = await create('trunk', { 'cluster-owned': 'yes' });
      const noManage = await create(undefined, { 'node.k8s.amazonaws.com/no_manage': 'true', team: 'hpc' });
      await cloud.attachEni(trunk, other.instanceId, 1);
      await cloud.attachEni(noManage, other.instanceId, 2);

      const enis = await cloud.describeInstanceEnis(other.instanceId);
      assert.deepEqual(
        enis.map((e) => [e.deviceNumber, e.eniId, e.interfaceType, e.tags]),
        [
          [0, other.primaryEni.eniId, 'interface', {}],
          [1, trunk, 'trunk', { 'cluster-owned': 'yes' }],
          [2, noManage, 'interface', { 'node.k8s.amazonaws.com/no_manage': 'true', team: 'hpc' }],
        ],
      );
    } finally {
      ec2.destroy();
    }
  });

  test('a detached ENI leaves the instance and a deleted one is gone', async () => {
    const created = await cloud.createEni('subnet-0a', NODE_SGS, 'vpcnet short-lived');
    const attachmentId = await cloud.attachEni(created.eniId, node.instanceId, 2);
    assert.ok((await cloud.describeInstanceEnis(node.instanceId)).some((e) => e.eniId === created.eniId));
    await cloud.detachEni(attachmentId);
    assert.ok(!(await cloud.describeInstanceEnis(node.instanceId)).some((e) => e.eniId === created.eniId));
    await cloud.deleteEni(created.eniId);
    const err = await cloud.deleteEni(created.eniId).catch((e: unknown) => e);
    assert.ok(err instanceof CloudError);
    assert.equal(err.code, 'InvalidNetworkInterfaceID.NotFound');
    assert.match(
      err.message,
      new RegExp(`^cannot delete ENI ${created.eniId}: InvalidNetworkInterfaceID\\.NotFound: `),
    );
  });

  test('describeDetachedEnis lists only unattached ENIs carrying the tag asked for', async () => {
    const tag = { 'node.k8s.amazonaws.com/instance_id': node.instanceId };
    const left = await cloud.createEni('subnet-0a', NODE_SGS, 'vpcnet left over', tag);
    const other = await cloud.createEni('subnet-0a', NODE_SGS, 'another node', {
      'node.k8s.amazonaws.com/instance_id': 'i-0other',
    });
    const attached = await cloud.createEni('subnet-0a', NODE_SGS, 'vpcnet in use', tag);
    const used = new Set((await cloud.describeInstanceEnis(node.instanceId)).map((e) => e.deviceNumber));
    const device = [1, 2].find((d) => !used.has(d)) ?? 1;
    const attachmentId = await cloud.attachEni(attached.eniId, node.instanceId, device);
    const found = await cloud.describeDetachedEnis('node.k8s.amazonaws.com/instance_id', node.instanceId);
    assert.deepEqual(
      found.map((e) => e.eniId),
      [left.eniId],
    );
    assert.equal(found[0]?.subnetId, 'subnet-0a');
    assert.equal(found[0]?.description, 'vpcnet left over');
    assert.equal(found[0]?.tags['node.k8s.amazonaws.com/instance_id'], node.instanceId);
    await cloud.detachEni(attachmentId);
    for (const id of [left.eniId, other.eniId, attached.eniId]) await cloud.deleteEni(id);
  });

  test('attaching past the instance type limit is AttachmentLimitExceeded naming the ENI and instance', async () => {
    const small = await emu.launchInstance({ instanceType: 't3.medium', subnetId: 'subnet-0a' });
    const limits = await cloud.instanceTypeLimits('t3.medium');
    for (let device = 1; device < limits.maxEnis; device++) {
      const eni = await cloud.createEni('subnet-0a', [], 'filler');
      await cloud.attachEni(eni.eniId, small.instanceId, device);
    }
    const extra = await cloud.createEni('subnet-0a', [], 'one too many');
    const err = await cloud.attachEni(extra.eniId, small.instanceId, limits.maxEnis).catch((e: unknown) => e);
    assert.ok(err instanceof CloudError);
    assert.equal(err.code, 'AttachmentLimitExceeded');
    assert.equal(err.retryable, false);
    assert.ok(
      err.message.startsWith(
        `cannot attach ENI ${extra.eniId} to ${small.instanceId} at device index ${limits.maxEnis}: ` +
          'AttachmentLimitExceeded: ',
      ),
      err.message,
    );
    assert.equal((await cloud.describeInstanceEnis(small.instanceId)).length, limits.maxEnis);
  });

  test('an ENI that does not exist is a non-retryable NotFound error', async () => {
    const err = await cloud.assignPrivateIps('eni-0000000000000dead', 1).catch((e: unknown) => e);
    assert.ok(err instanceof CloudError);
    assert.equal(err.code, 'InvalidNetworkInterfaceID.NotFound');
    assert.equal(err.retryable, false);
    assert.match(err.message, /^cannot assign 1 private IPs to ENI eni-0000000000000dead: /);
  });

  test('throttling is one attempt that surfaces as a retryable RequestLimitExceeded (LimitedCloud retries)', async () => {
    emu.setFaults({ throttleRate: 1, actions: ['AssignPrivateIpAddresses'] });
    try {
      const before = callsOf('AssignPrivateIpAddresses').length;
      const err = await cloud.assignPrivateIps(node.primaryEni.eniId, 1).catch((e: unknown) => e);
      assert.ok(err instanceof CloudError);
      assert.equal(err.code, 'RequestLimitExceeded');
      assert.equal(err.retryable, true);
      assert.match(err.message, /^cannot assign 1 private IPs to ENI eni-\w+: RequestLimitExceeded: \S/);
      assert.deepEqual(
        callsOf('AssignPrivateIpAddresses')
          .slice(before)
          .map((c) => c.code),
        ['RequestLimitExceeded'],
        'the client itself does not retry',
      );
      // Other actions are not throttled.
      assert.equal((await cloud.describeInstanceEnis(node.instanceId)).length, 2);
    } finally {
      emu.setFaults({});
    }
  });

  test('an internal error of EC2 (500) is a retryable CloudError with its code', async () => {
    emu.setFaults({ errorRate: 1, actions: ['DescribeSubnets'] });
    const fresh = await connect();
    try {
      const err = await fresh.describeInstanceEnis(node.instanceId).catch((e: unknown) => e);
      assert.ok(err instanceof CloudError);
      assert.equal(err.code, 'InternalError');
      assert.equal(err.retryable, true);
      assert.match(err.message, /^cannot describe subnet subnet-0a: InternalError: /);
    } finally {
      emu.setFaults({});
      fresh.close();
    }
  });

  test('a client configured from the environment alone signs with AWS_ACCESS_KEY_ID and reads the region from IMDS', async () => {
    const fromEnv = await createAwsCloud({
      env: {
        AWS_ENDPOINT_URL_EC2: emu.urls[0]!,
        AWS_EC2_METADATA_SERVICE_ENDPOINT: emu.urls[0]!,
        AWS_ACCESS_KEY_ID: 'AKIDFROMENV',
        AWS_SECRET_ACCESS_KEY: 'secret',
      },
    });
    try {
      assert.equal((await fromEnv.instanceTypeLimits('t3.medium')).maxEnis, 3);
    } finally {
      fromEnv.close();
    }
  });
});
