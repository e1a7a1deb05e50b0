// Where the next ENI goes: the default, subnet discovery's choice, custom networking's checks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { zoneSubnet } from '../testing/fake-enis.ts';
import { EniPlacementError, primarySubnetPlacer } from './eni-placement.ts';
import { customNetworkPlacer, type NodeEniConfigSource } from './eni-placement-custom.ts';
import {
  chooseDiscoveredSubnet,
  discoveredSubnetPlacer,
  rankDiscoveredSubnets,
  SUBNET_DISCOVERY_TAG,
} from './eni-placement-discovery.ts';

const subnet = zoneSubnet;
const tagged = { [SUBNET_DISCOVERY_TAG]: '1' };

function configs(config: Partial<Awaited<ReturnType<NodeEniConfigSource['current']>>>): NodeEniConfigSource {
  return {
    current: () =>
      Promise.resolve({
        name: 'az-a',
        chosenBy: 'node label x',
        subnetId: 'subnet-pods',
        securityGroupIds: [],
        ...config,
      }),
  };
}

const rejectsWith = (pattern: RegExp) => (err: unknown) =>
  err instanceof EniPlacementError && pattern.test(err.message);

test("by default a new ENI goes into the primary ENI's subnet with its security groups, and the primary lends addresses", async () => {
  const cloud = new FakeCloud();
  const placer = primarySubnetPlacer(cloud.meta);
  assert.equal(placer.primaryEniCarriesPods, true);
  const p = await placer.next();
  assert.deepEqual([p.subnetId, p.subnetCidr, p.securityGroupIds], ['subnet-1', '10.0.0.0/16', ['sg-1']]);
});

test('subnet discovery takes the tagged subnet of the zone with the most free addresses', () => {
  const meta = new FakeCloud().meta;
  const chosen = chooseDiscoveredSubnet(
    [
      subnet('subnet-1', 50),
      subnet('subnet-small', 80, { tags: tagged }),
      subnet('subnet-big', 900, { tags: tagged }),
    ],
    meta,
  );
  assert.equal(chosen.subnetId, 'subnet-big');
});

test('subnet discovery ignores untagged subnets and tagged ones of another VPC, whatever their free addresses', () => {
  const meta = new FakeCloud().meta;
  const chosen = chooseDiscoveredSubnet(
    [
      subnet('subnet-1', 50),
      subnet('subnet-untagged', 5000),
      subnet('subnet-other-vpc', 5000, { vpcId: 'vpc-2', tags: tagged }),
    ],
    meta,
  );
  assert.equal(chosen.subnetId, 'subnet-1');
});

test('subnet discovery counts any value of the tag, and keeps the primary subnet on a tie', () => {
  const meta = new FakeCloud().meta;
  assert.equal(
    chooseDiscoveredSubnet(
      [subnet('subnet-1', 10), subnet('subnet-t', 11, { tags: { [SUBNET_DISCOVERY_TAG]: '' } })],
      meta,
    ).subnetId,
    'subnet-t',
  );
  assert.equal(
    chooseDiscoveredSubnet([subnet('subnet-t', 10, { tags: tagged }), subnet('subnet-1', 10)], meta).subnetId,
    'subnet-1',
  );
});

test('subnet discovery with no free address in any candidate says so with the counts', () => {
  const meta = new FakeCloud().meta;
  assert.throws(
    () => chooseDiscoveredSubnet([subnet('subnet-1', 0), subnet('subnet-t', 0, { tags: tagged })], meta),
    rejectsWith(
      /no subnet of vpc-1 in us-east-1a can take a new ENI: subnet-1 has no free address; subnet-t has no free address$/,
    ),
  );
});

test("subnet discovery asks EC2 for the zone's subnets and uses the primary ENI's security groups", async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-pods', 4000, { cidr: '10.2.0.0/20', tags: tagged }));
  cloud.subnets.push(subnet('subnet-far', 9000, { availabilityZone: 'us-east-1b', tags: tagged }));
  const p = await discoveredSubnetPlacer(cloud, cloud.meta).next();
  assert.deepEqual([p.subnetId, p.subnetCidr, p.securityGroupIds], ['subnet-pods', '10.2.0.0/20', ['sg-1']]);
  assert.ok(cloud.calls.some((c) => c.startsWith('describeSubnets') && c.includes('us-east-1a')));
});

test("custom networking places the ENI in the ENIConfig's subnet and security groups; the primary lends nothing", async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-pods', 4000, { cidr: '10.2.0.0/20' }));
  const placer = customNetworkPlacer(cloud, cloud.meta, configs({ securityGroupIds: ['sg-pods'] }));
  assert.equal(placer.primaryEniCarriesPods, false);
  const p = await placer.next();
  assert.deepEqual(
    [p.subnetId, p.subnetCidr, p.securityGroupIds],
    ['subnet-pods', '10.2.0.0/20', ['sg-pods']],
  );
});

test("custom networking with an ENIConfig without security groups uses the primary ENI's, as upstream", async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-pods', 4000));
  const p = await customNetworkPlacer(cloud, cloud.meta, configs({})).next();
  assert.deepEqual(p.securityGroupIds, ['sg-1']);
});

test('custom networking without an ENIConfig for the node fails with the reason the source gives', async () => {
  const cloud = new FakeCloud();
  const missing: NodeEniConfigSource = {
    current: () =>
      Promise.reject(new Error('ENIConfig default (no annotation nor label on the node) does not exist')),
  };
  await assert.rejects(
    customNetworkPlacer(cloud, cloud.meta, missing).next(),
    rejectsWith(
      /^custom networking: ENIConfig default \(no annotation nor label on the node\) does not exist$/,
    ),
  );
});

test('custom networking with an ENIConfig naming a missing subnet says which', async () => {
  const cloud = new FakeCloud();
  await assert.rejects(
    customNetworkPlacer(cloud, cloud.meta, configs({ subnetId: 'subnet-gone' })).next(),
    rejectsWith(/ENIConfig az-a \(node label x\) names subnet subnet-gone, which does not exist/),
  );
});

test("custom networking refuses a subnet in another zone or VPC than the node's", async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-b', 4000, { availabilityZone: 'us-east-1b' }));
  cloud.subnets.push(subnet('subnet-v', 4000, { vpcId: 'vpc-9' }));
  await assert.rejects(
    customNetworkPlacer(cloud, cloud.meta, configs({ subnetId: 'subnet-b' })).next(),
    rejectsWith(/names subnet subnet-b in us-east-1b, but the node is in us-east-1a/),
  );
  await assert.rejects(
    customNetworkPlacer(cloud, cloud.meta, configs({ subnetId: 'subnet-v' })).next(),
    rejectsWith(/names subnet subnet-v of vpc-9, but the node is in vpc-1/),
  );
});

test('custom networking passes a failing DescribeSubnets on as a retryable pass failure, not a placement verdict', async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-pods', 4000));
  cloud.failNext('describeSubnets', new CloudError('throttled', 'RequestLimitExceeded', true));
  await assert.rejects(
    customNetworkPlacer(cloud, cloud.meta, configs({})).next(),
    (err: unknown) => !(err instanceof EniPlacementError) && /RequestLimitExceeded/.test(String(err)),
  );
});

test('subnet discovery ranks every candidate with a free address, most first; the rest are the fallbacks of the first', async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-pods', 4000, { cidr: '10.2.0.0/20', tags: tagged }));
  cloud.subnets.push(subnet('subnet-some', 300, { cidr: '10.3.0.0/20', tags: tagged }));
  cloud.subnets.push(subnet('subnet-none', 0, { cidr: '10.4.0.0/20', tags: tagged }));
  assert.deepEqual(
    rankDiscoveredSubnets(cloud.subnets, cloud.meta).map((s) => s.subnetId),
    ['subnet-pods', 'subnet-1', 'subnet-some'], // the primary subnet has 1000 free
  );
  const p = await discoveredSubnetPlacer(cloud, cloud.meta).next();
  assert.equal(p.subnetId, 'subnet-pods');
  assert.deepEqual(
    p.fallbacks?.map((f) => f.subnetId),
    ['subnet-1', 'subnet-some'],
  );
  assert.ok(
    !p.fallbacks?.some((f) => f.subnetId === 'subnet-none'),
    'a subnet without a free address is no candidate',
  );
});

test('with a census in prefix mode, the subnet with the most free /28s ranks first, whatever its free addresses', () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-many-ips', 4000, { cidr: '10.2.0.0/20', tags: tagged }));
  cloud.subnets.push(subnet('subnet-many-28s', 900, { cidr: '10.3.0.0/22', tags: tagged }));
  cloud.subnets.push(subnet('subnet-unseen', 3000, { cidr: '10.4.0.0/20', tags: tagged }));
  const free28: Record<string, number> = { 'subnet-many-ips': 3, 'subnet-many-28s': 50, 'subnet-1': 0 };
  assert.deepEqual(
    rankDiscoveredSubnets(cloud.subnets, cloud.meta, { freePrefixesOf: (id) => free28[id] }).map(
      (s) => s.subnetId,
    ),
    ['subnet-many-28s', 'subnet-many-ips', 'subnet-unseen', 'subnet-1'],
    'a subnet the census has not seen ranks after those with a /28, before those without',
  );
});
