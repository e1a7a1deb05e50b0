// DescribeSubnets through the AWS driver against the emulator: by ID, by zone and VPC, with tags
// and the free address count that subnet discovery chooses by.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { RunningEmulator, VpcSpec } from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { CloudError } from '../cloud.ts';
import type { AwsCloud } from './aws.ts';
import { createAwsCloud } from './create-aws-cloud.ts';

const VPC: VpcSpec = {
  vpcId: 'vpc-0subnets',
  cidr: '10.0.0.0/16',
  region: 'us-west-2',
  subnets: [
    { subnetId: 'subnet-0node', cidr: '10.0.0.0/24', availabilityZone: 'us-west-2a' },
    {
      subnetId: 'subnet-0pods',
      cidr: '10.0.16.0/20',
      availabilityZone: 'us-west-2a',
      tags: { 'kubernetes.io/role/cni': '1' },
    },
    { subnetId: 'subnet-0far', cidr: '10.0.32.0/24', availabilityZone: 'us-west-2b' },
  ],
};

let emu: RunningEmulator;
let cloud: AwsCloud;
before(async () => {
  emu = await startEmulator({ vpc: VPC, listen: [{ host: '127.0.0.1', port: 0 }], random: seededRandom(7) });
  cloud = await createAwsCloud({
    region: VPC.region,
    ec2Endpoint: emu.urls[0]!,
    imds: { endpoint: emu.urls[0]! },
    credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' },
  });
});
after(async () => {
  cloud?.close();
  await emu?.close();
});

test('describeSubnets of one zone lists its subnets with VPC, CIDR, tags and free addresses', async () => {
  const found = await cloud.describeSubnets({ availabilityZone: 'us-west-2a', vpcId: VPC.vpcId });
  assert.deepEqual(
    found.map((s) => s.subnetId),
    ['subnet-0node', 'subnet-0pods'],
  );
  const pods = found.find((s) => s.subnetId === 'subnet-0pods');
  assert.deepEqual(pods, {
    subnetId: 'subnet-0pods',
    vpcId: VPC.vpcId,
    availabilityZone: 'us-west-2a',
    cidr: '10.0.16.0/20',
    availableIpCount: 4096 - 5,
    tags: { 'kubernetes.io/role/cni': '1' },
  });
});

test('describeSubnets of another VPC finds nothing', async () => {
  assert.deepEqual(await cloud.describeSubnets({ availabilityZone: 'us-west-2a', vpcId: 'vpc-0other' }), []);
});

test('describeSubnets by ID names an unknown subnet with EC2 code InvalidSubnetID.NotFound', async () => {
  const [far] = await cloud.describeSubnets({ subnetIds: ['subnet-0far'] });
  assert.equal(far?.availabilityZone, 'us-west-2b');
  await assert.rejects(
    cloud.describeSubnets({ subnetIds: ['subnet-0gone'] }),
    (err: unknown) => err instanceof CloudError && err.code === 'InvalidSubnetID.NotFound',
  );
});
