// Placement by the census, through the real pool manager, AWS driver and emulator: in prefix mode
// a new ENI goes to the subnet with the most free /28s (not the most free addresses), and a subnet
// the census shows without a /28 is not asked for one, so EC2 never answers InsufficientCidrBlocks.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { SubnetSpec } from '../../emulator/api.ts';
import { discoveredSubnetPlacer } from '../enis/eni-placement-discovery.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager } from '../pool/pool-manager.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';
import { FixedCensus } from '../testing/fixed-census.ts';
import { takeCensus } from './census-reading.ts';

const ROLE = 'kubernetes.io/role/cni';
const quiet = { info() {}, warn() {}, error() {} };
const BIG: SubnetSpec = {
  subnetId: 'subnet-0big000000000000',
  cidr: '10.1.16.0/20',
  availabilityZone: 'us-west-2a',
  tags: { [ROLE]: '1' },
  // Other tenants' addresses all over it: thousands of free addresses, few whole /28s.
  preFragmentation: { seed: 4, tenantEnis: 100, addressesPerEni: 5 },
};
const CLEAN: SubnetSpec = {
  subnetId: 'subnet-0clean0000000000',
  cidr: '10.1.8.0/22',
  availabilityZone: 'us-west-2a',
  tags: { [ROLE]: '1' },
};

const open: { node: EmulatedNode; manager: PoolManager }[] = [];
afterEach(async () => {
  for (const { node, manager } of open.splice(0)) {
    await manager.stop();
    await node.close();
  }
});

async function node(withCensus: boolean) {
  const n = await startEmulatedNode({ instanceType: 't3.medium', seed: 31, moreSubnets: [BIG, CLEAN] });
  await n.admin('POST', '/admin/subnets/subnet-0ipam/fragmentation');
  const metadata = await n.cloud.metadata();
  const census = withCensus ? new FixedCensus() : undefined;
  const manager = new PoolManager({
    cloud: n.cloud,
    pool: new AddressPool({ cooldownMs: 30_000 }),
    clock: { now: () => 1_000_000 },
    log: quiet,
    metadata,
    limits: await n.cloud.instanceTypeLimits(metadata.instanceType),
    targets: { warmEniTarget: 1, cooldownSeconds: 30 },
    eniPlacement: discoveredSubnetPlacer(
      n.cloud,
      metadata,
      undefined,
      census === undefined ? undefined : { census, byPrefixes: true },
    ),
    prefixMode: { enabled: true, warmPrefixTarget: 1 },
    minEniLifetimeMs: 0,
    ...(census === undefined ? {} : { census }),
  });
  open.push({ node: n, manager });
  // What the cluster's census loop would have published for the zone's subnets.
  const subnets: [string, string][] = [
    ['subnet-0ipam', '10.1.0.0/22'],
    [BIG.subnetId, BIG.cidr],
    [CLEAN.subnetId, CLEAN.cidr],
  ];
  for (const [subnetId, cidr] of subnets)
    census?.set(await takeCensus(n.cloud, { subnetId, cidr }, 1, quiet));
  await manager.init();
  for (let i = 0; i < 10 && (await manager.runPass()).kind !== 'none'; i++);
  const state = (await n.admin('GET', '/admin/state')) as {
    enis: { subnetId: string; ipv4Prefixes: string[]; attachment: unknown }[];
    ec2Calls: Record<string, { calls: number; errors: number }>;
  };
  return {
    manager,
    census,
    state,
    capacity: { big: await n.capacity(BIG.subnetId), clean: await n.capacity(CLEAN.subnetId) },
  };
}

test('the subnet with the most free /28s gets the prefix ENI; no prefix is asked of a subnet without one', async () => {
  const { census, state, capacity } = await node(true);
  assert.ok(capacity.big.freeAddresses > 2 * capacity.clean.freeAddresses, 'BIG has more free addresses');
  assert.ok(
    capacity.big.freePrefixes.length < capacity.clean.freePrefixes.length,
    'CLEAN has more free /28s',
  );
  assert.deepEqual(
    [...(census?.wanted.keys() ?? [])].sort(),
    [BIG.subnetId, CLEAN.subnetId, 'subnet-0ipam'].sort(),
  );
  const withPrefixes = state.enis.filter((e) => e.attachment !== null && e.ipv4Prefixes.length > 0);
  assert.deepEqual(
    withPrefixes.map((e) => e.subnetId),
    [CLEAN.subnetId],
  );
  assert.equal(state.ec2Calls.AssignPrivateIpAddresses?.errors ?? 0, 0, 'no InsufficientCidrBlocks');
});

test('without a census (upstream) the ENI goes by free addresses, after InsufficientCidrBlocks in the node subnet', async () => {
  const { state } = await node(false);
  const withPrefixes = state.enis.filter((e) => e.attachment !== null && e.ipv4Prefixes.length > 0);
  assert.deepEqual(
    withPrefixes.map((e) => e.subnetId),
    [BIG.subnetId],
  );
  assert.ok((state.ec2Calls.AssignPrivateIpAddresses?.errors ?? 0) >= 1);
});
