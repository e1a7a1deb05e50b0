// Subnet discovery's reading of subnet tags, as upstream 1.22.1 and later: `kubernetes.io/role/cni`
// 1 (any value but 0) offers a subnet, 0 excludes it (the primary ENI's too) and drains the ENIs in
// it, no tag leaves the primary subnet offered and any other out; cluster tags keep a subnet to the
// clusters they name when CLUSTER_NAME is set. And with discovery off, a primary subnet tagged 0
// takes no new ENI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError, type SubnetInfo } from '../../cloud/cloud.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { zoneSubnet } from '../testing/fake-enis.ts';
import { EniPlacementError } from './eni-placement.ts';
import {
  discoveredSubnetPlacer,
  drainingOf,
  primarySubnetPlacerUnlessExcluded,
  rankDiscoveredSubnets,
} from './eni-placement-discovery.ts';

const ROLE = 'kubernetes.io/role/cni';
const cluster = (name: string) => `cni.networking.k8s.aws/cluster/${name}`;

function subnet(subnetId: string, free: number, tags: Record<string, string> = {}): SubnetInfo {
  return zoneSubnet(subnetId, free, { tags });
}

const meta = new FakeCloud().meta; // primary subnet subnet-1, vpc-1, us-east-1a
const ranked = (subnets: SubnetInfo[], clusterName?: string) =>
  rankDiscoveredSubnets(subnets, meta, { clusterName }).map((s) => s.subnetId);

test('tag 1 offers a subnet, tag 0 never, and no tag leaves only the primary subnet offered', () => {
  assert.deepEqual(
    ranked([
      subnet('subnet-1', 100),
      subnet('subnet-one', 500, { [ROLE]: '1' }),
      subnet('subnet-zero', 9000, { [ROLE]: '0' }),
      subnet('subnet-untagged', 8000),
    ]),
    ['subnet-one', 'subnet-1'],
  );
});

test('the primary subnet tagged 0 is no candidate however many free addresses it has; tagged 1 it is one', () => {
  assert.deepEqual(
    ranked([subnet('subnet-1', 9000, { [ROLE]: '0' }), subnet('subnet-pods', 50, { [ROLE]: '1' })]),
    ['subnet-pods'],
  );
  assert.deepEqual(
    ranked([subnet('subnet-1', 9000, { [ROLE]: '1' }), subnet('subnet-pods', 50, { [ROLE]: '1' })]),
    ['subnet-1', 'subnet-pods'],
  );
});

test('with the primary subnet tagged 0 and no other tagged, the error names each subnet and why', () => {
  assert.throws(
    () => ranked([subnet('subnet-1', 9000, { [ROLE]: '0' }), subnet('subnet-other', 900)]),
    (err: unknown) =>
      err instanceof EniPlacementError &&
      err.message ===
        `subnet discovery: no subnet of vpc-1 in us-east-1a can take a new ENI: subnet-1 tagged ${ROLE}=0; tag one ${ROLE}=1`,
  );
});

test('cluster tags keep a subnet to the clusters they name, once CLUSTER_NAME is set', () => {
  const subnets = [
    subnet('subnet-1', 10),
    subnet('subnet-red', 900, { [ROLE]: '1', [cluster('red')]: 'shared' }),
    subnet('subnet-blue', 800, { [ROLE]: '1', [cluster('blue')]: 'owned' }),
    subnet('subnet-both', 700, { [ROLE]: '1', [cluster('red')]: 'shared', [cluster('blue')]: 'shared' }),
    subnet('subnet-any', 600, { [ROLE]: '1' }),
  ];
  assert.deepEqual(ranked(subnets, 'blue'), ['subnet-blue', 'subnet-both', 'subnet-any', 'subnet-1']);
  assert.deepEqual(
    ranked(subnets),
    ['subnet-red', 'subnet-blue', 'subnet-both', 'subnet-any', 'subnet-1'],
    'without CLUSTER_NAME cluster tags are not looked at',
  );
  assert.deepEqual(
    ranked(
      [
        subnet('subnet-red', 900, { [ROLE]: '1', [cluster('red')]: 'shared' }),
        subnet('subnet-old', 900, { [ROLE]: '1', 'kubernetes.io/cluster/red': 'shared' }),
        subnet('subnet-1', 10),
      ],
      'blue',
    ),
    ['subnet-old', 'subnet-1'],
    "the old kubernetes.io/cluster/ prefix is not upstream's cluster tag",
  );
});

test('an untagged primary subnet stays offered whatever its cluster tags say; tagged 1, another cluster takes it away', () => {
  assert.deepEqual(ranked([subnet('subnet-1', 10, { [cluster('red')]: 'shared' })], 'blue'), ['subnet-1']);
  assert.throws(
    () => ranked([subnet('subnet-1', 10, { [ROLE]: '1', [cluster('red')]: 'shared' })], 'blue'),
    /subnet-1 kept to cluster red by cni\.networking\.k8s\.aws\/cluster\/…, not CLUSTER_NAME blue/,
  );
});

test('subnets to avoid (no free /28 lately) come after every other candidate, still offered', () => {
  const subnets = [subnet('subnet-1', 100), subnet('subnet-big', 5000, { [ROLE]: '1' })];
  assert.deepEqual(
    rankDiscoveredSubnets(subnets, meta, { avoid: new Set(['subnet-big']) }).map((s) => s.subnetId),
    ['subnet-1', 'subnet-big'],
  );
});

test('what drains: subnets tagged 0 (the primary too) and those tagged for other clusters; untagged and tag-1 subnets do not', () => {
  const drains = drainingOf(
    [
      subnet('subnet-1', 10, { [ROLE]: '0' }),
      subnet('subnet-zero', 10, { [ROLE]: '0' }),
      subnet('subnet-red', 10, { [ROLE]: '1', [cluster('red')]: 'shared' }),
      subnet('subnet-blue', 10, { [ROLE]: '1', [cluster('blue')]: 'shared' }),
      subnet('subnet-one', 10, { [ROLE]: '1' }),
      subnet('subnet-untagged', 10, { [cluster('red')]: 'shared' }),
    ],
    meta,
    'blue',
  );
  assert.deepEqual(Object.fromEntries(drains), {
    'subnet-1': `tagged ${ROLE}=0`,
    'subnet-zero': `tagged ${ROLE}=0`,
    'subnet-red': 'kept to cluster red by cni.networking.k8s.aws/cluster/…, not CLUSTER_NAME blue',
  });
});

test('the discovery placer asks EC2 for the subnets of the node VPC and zone, and says what drains from the same read', async () => {
  const cloud = new FakeCloud();
  cloud.subnets.push(subnet('subnet-zero', 9000, { [ROLE]: '0' }));
  cloud.subnets.push(subnet('subnet-pods', 4000, { [ROLE]: '1' }));
  const placer = discoveredSubnetPlacer(cloud, cloud.meta);
  assert.equal((await placer.next()).subnetId, 'subnet-pods');
  assert.deepEqual(Object.fromEntries((await placer.drainingSubnets?.()) ?? []), {
    'subnet-zero': `tagged ${ROLE}=0`,
  });
  assert.deepEqual(
    cloud.calls.filter((c) => c.startsWith('describeSubnets')),
    Array(2).fill('describeSubnets {"availabilityZone":"us-east-1a","vpcId":"vpc-1"}'),
  );
});

test('with subnet discovery off, a primary subnet tagged 0 takes no new ENI; untagged, or tags unreadable, it does', async () => {
  const cloud = new FakeCloud();
  const placer = primarySubnetPlacerUnlessExcluded(cloud, cloud.meta);
  assert.equal((await placer.next()).subnetId, 'subnet-1');
  cloud.failNext('describeSubnets', new CloudError('denied', 'UnauthorizedOperation', false));
  const unread = await placer.next();
  assert.equal(unread.subnetId, 'subnet-1');
  assert.match(unread.reason, /its tags unread: .*UnauthorizedOperation/);
  cloud.subnets[0] = { ...cloud.subnets[0]!, tags: { [ROLE]: '0' } };
  await assert.rejects(
    placer.next(),
    (err: unknown) =>
      err instanceof EniPlacementError &&
      /subnet-1 is tagged kubernetes\.io\/role\/cni=0 and ENABLE_SUBNET_DISCOVERY=false/.test(err.message),
  );
});
