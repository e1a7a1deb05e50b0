// Draining with subnet discovery: once a subnet is tagged kubernetes.io/role/cni=0, the ENIs in it
// lend no new address, give their free ones back, keep what pods hold, and the one vpcnet created
// goes once it is empty, its cooldown over and its minimum lifetime reached; the primary ENI in a
// drained subnet gives its addresses back but stays; removing the tag ends the drain.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { SubnetInfo } from '../../cloud/cloud.ts';
import type { EniPlacer } from '../enis/eni-placement.ts';
import { discoveredSubnetPlacer } from '../enis/eni-placement-discovery.ts';
import type { FakeCloud } from '../testing/fake-cloud.ts';
import { managerFactory, settle, T0 } from '../testing/manager-setup.ts';

const ROLE = 'kubernetes.io/role/cni';
const TAGS_MS = 1000;

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

/** Sets the subnet's tags as CreateTags/DeleteTags would (what the next DescribeSubnets shows). */
function tag(cloud: FakeCloud, subnetId: string, tags: Record<string, string>): void {
  const i = cloud.subnets.findIndex((s) => s.subnetId === subnetId);
  cloud.subnets[i] = { ...cloud.subnets[i]!, tags };
}

/** Subnet discovery over the fake cloud: the primary ENI's subnet-1, and subnets a and b tagged 1. */
async function discoveryNode(minEniLifetimeMs: number) {
  let placer: EniPlacer | undefined;
  const lazy: EniPlacer = {
    primaryEniCarriesPods: true,
    next: (o) => (placer ?? assert.fail('no placer')).next(o),
    drainingSubnets: () => (placer?.drainingSubnets ?? assert.fail('no placer'))(),
  };
  const run = await setup({
    primarySecondaryIps: 3,
    prepare: (c) => {
      const base = c.subnets[0]!;
      const more = (subnetId: string, cidr: string, free: number): SubnetInfo => ({
        ...base,
        subnetId,
        cidr,
        availableIpCount: free,
        tags: { [ROLE]: '1' },
      });
      c.subnets.push(more('subnet-a', '10.9.0.0/16', 9000), more('subnet-b', '10.8.0.0/16', 5000));
      placer = discoveredSubnetPlacer(c, c.meta);
    },
    deps: { eniPlacement: lazy, minEniLifetimeMs, subnetTagsIntervalMs: TAGS_MS },
  });
  return run;
}

const subnetOfEni = (cloud: FakeCloud, eniId: string) =>
  cloud.attached().find((e) => e.eniId === eniId)?.subnetId;

test('an ENI of a subnet tagged 0 lends nothing more, gives its free addresses back, keeps its pod, and is freed once empty, cooled and old enough', async () => {
  const { cloud, manager, clock, pool, logs } = await discoveryNode(60_000);
  for (let i = 0; i < 3; i++) assert.ok(manager.allocate(`vpcnet/p${i}/eth0`));
  await settle(manager);
  const eniA = cloud.attached().find((e) => e.subnetId === 'subnet-a')?.eniId;
  assert.ok(eniA, 'the second ENI went into subnet-a, the tagged subnet with the most free addresses');
  const onA = manager.allocate('vpcnet/p3/eth0');
  assert.equal(onA?.eniId, eniA);

  tag(cloud, 'subnet-a', { [ROLE]: '0' });
  clock.t = T0 + TAGS_MS;
  assert.deepEqual(await settle(manager), ['attachEni', 'assign 3', 'drain 2']);
  assert.deepEqual(manager.health().drain?.enis, [eniA]);
  assert.deepEqual(manager.health().drain?.subnets, { 'subnet-a': `tagged ${ROLE}=0` });
  const given = cloud.calls.filter((c) => c.startsWith(`unassignPrivateIps ${eniA}`));
  assert.equal(given.length, 1, 'its two free addresses went back in one call');
  assert.deepEqual([...pool.addresses(eniA).keys()], [onA?.ip], "the pod's address stays on it");
  const eniB = cloud.attached().find((e) => e.subnetId === 'subnet-b')?.eniId;
  assert.ok(eniB, 'the pool grew into subnet-b instead');
  for (let i = 4; i < 7; i++) {
    assert.equal(manager.allocate(`vpcnet/p${i}/eth0`)?.eniId, eniB, 'new pods never get a drained address');
  }

  manager.release(onA?.ip ?? '');
  await settle(manager);
  assert.equal(subnetOfEni(cloud, eniA), 'subnet-a', 'kept while its last address cools down');
  clock.t = T0 + 40_000; // cooled, but the ENI is 40 s old
  await settle(manager);
  assert.equal(subnetOfEni(cloud, eniA), 'subnet-a', 'kept below its minimum lifetime');
  clock.t = T0 + 61_000;
  await settle(manager);
  assert.equal(subnetOfEni(cloud, eniA), undefined, 'detached once empty, cooled and a minute old');
  assert.ok(cloud.calls.includes(`deleteEni ${eniA}`));
  assert.ok(logs.some((l) => l.includes('freeing idle ENI') && l.includes(eniA)));
  assert.ok(!cloud.attached().some((e) => e.subnetId === 'subnet-a'), 'no new ENI in the drained subnet');
});

test('the primary ENI of a subnet tagged 0 gives its free addresses back and lends nothing, but stays; its pod keeps its address', async () => {
  const { cloud, manager, clock, pool } = await discoveryNode(0);
  const held = manager.allocate('vpcnet/p0/eth0');
  assert.equal(held?.eniId, 'eni-primary');
  tag(cloud, 'subnet-1', { [ROLE]: '0' });
  clock.t = T0 + TAGS_MS;
  await settle(manager);
  assert.deepEqual(manager.health().drain?.enis, ['eni-primary']);
  assert.deepEqual([...pool.addresses('eni-primary').keys()], [held?.ip]);
  assert.equal(cloud.calls.filter((c) => c.startsWith('unassignPrivateIps eni-primary')).length, 1);
  const next = manager.allocate('vpcnet/p1/eth0');
  assert.equal(next?.eni.subnetId, 'subnet-a');

  manager.release(held?.ip ?? '');
  clock.t = T0 + TAGS_MS + 30_000;
  await settle(manager);
  assert.equal(pool.addresses('eni-primary').size, 0, 'its last address went back once cooled');
  assert.ok(
    cloud.attached().some((e) => e.eniId === 'eni-primary'),
    'the primary ENI is never detached',
  );
});

test('removing the 0 tag ends the drain at the next read: the ENI lends again', async () => {
  const { cloud, manager, clock } = await discoveryNode(0);
  tag(cloud, 'subnet-1', { [ROLE]: '0' });
  clock.t = T0 + TAGS_MS;
  await settle(manager);
  assert.deepEqual(manager.health().drain?.enis, ['eni-primary']);
  tag(cloud, 'subnet-1', {});
  await settle(manager);
  assert.deepEqual(manager.health().drain?.enis, ['eni-primary'], 'read again only after the interval');
  clock.t = T0 + 2 * TAGS_MS;
  await settle(manager);
  assert.deepEqual(manager.health().drain?.enis, []);
  // subnet-a's ENI, grown during the drain, fills first; then the primary ENI has room again.
  for (let i = 0; i < 3; i++) assert.equal(manager.allocate(`vpcnet/p${i}/eth0`)?.eni.subnetId, 'subnet-a');
  const before = cloud.calls.filter((c) => c.startsWith('assignPrivateIps eni-primary')).length;
  await settle(manager);
  assert.equal(cloud.calls.filter((c) => c.startsWith('assignPrivateIps eni-primary')).length, before + 1);
  assert.equal(manager.allocate('vpcnet/p3/eth0')?.eniId, 'eni-primary', 'it lends again');
});

test('an ENI found later in a drained subnet lends nothing from the moment it joins the pool', async () => {
  const { cloud, manager, clock, pool } = await discoveryNode(0);
  tag(cloud, 'subnet-1', { [ROLE]: '0' });
  clock.t = T0 + TAGS_MS;
  await settle(manager);
  const found = cloud.attachForeignEni({ deviceIndex: 2, secondaryIps: 2 });
  await manager.refreshEnis();
  assert.ok(pool.eni(found), 'adopted into the pool');
  assert.ok(pool.isDraining(found), 'draining before any pass ran');
  assert.ok(manager.health().drain?.enis.includes(found));
});
