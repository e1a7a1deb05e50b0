// Subnet discovery with the real AWS driver against the in-process emulator: a node whose own
// subnet comes on a later page of DescribeSubnets still places its ENIs (the driver follows every
// NextToken of its VPC), and in prefix mode a subnet without a free /28 sends the prefix to a new ENI
// in the next subnet the tags offer before any fallback to secondary IPs.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { SubnetSpec } from '../../emulator/api.ts';
import { discoveredSubnetPlacer } from '../enis/eni-placement-discovery.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';
import { AddressPool } from './pool.ts';
import { PoolManager } from './pool-manager.ts';

const ROLE = 'kubernetes.io/role/cni';

const open: { node: EmulatedNode; manager: PoolManager }[] = [];
afterEach(async () => {
  for (const { node, manager } of open.splice(0)) {
    await manager.stop();
    await node.close();
  }
});

const clock = { t: 1_000_000, now: () => clock.t };

async function discoveryManager(
  node: EmulatedNode,
  prefixes: boolean,
): Promise<{ manager: PoolManager; logs: string[] }> {
  const metadata = await node.cloud.metadata();
  const logs: string[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const manager = new PoolManager({
    cloud: node.cloud,
    pool: new AddressPool({ cooldownMs: 30_000 }),
    clock,
    log: { info: record('info'), warn: record('warn'), error: record('error') },
    metadata,
    limits: await node.cloud.instanceTypeLimits(metadata.instanceType),
    targets: { warmEniTarget: 1, cooldownSeconds: 30 },
    eniPlacement: discoveredSubnetPlacer(node.cloud, metadata),
    prefixMode: { enabled: prefixes, warmPrefixTarget: 1 },
    minEniLifetimeMs: 0,
  });
  open.push({ node, manager });
  await manager.init();
  return { manager, logs };
}

async function settle(manager: PoolManager): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < 20; i++) {
    const d = await manager.runPass();
    if (d.kind === 'none') return done;
    done.push(d.kind);
  }
  throw new Error(`pool did not settle: ${done.join(', ')}`);
}

interface EniTruth {
  readonly eniId: string;
  readonly subnetId: string;
  readonly secondaryIps: string[];
  readonly ipv4Prefixes: string[];
  readonly attachment: { readonly deviceIndex: number } | null;
}

async function attached(node: EmulatedNode): Promise<EniTruth[]> {
  const state = (await (await fetch(`${node.url}/admin/state`)).json()) as { enis: EniTruth[] };
  return state.enis
    .filter((e) => e.attachment !== null)
    .sort((a, b) => (a.attachment?.deviceIndex ?? 0) - (b.attachment?.deviceIndex ?? 0));
}

test("a node whose own subnet is on DescribeSubnets' second page places its next ENI in the tagged subnet with the most free addresses", async () => {
  // Eleven subnets listed before the node's own; EC2 answers two a page.
  const more: SubnetSpec[] = Array.from({ length: 11 }, (_, i) => ({
    subnetId: `subnet-0more${String(i).padStart(12, '0')}`,
    cidr: `10.1.${4 * (i + 1)}.0/22`,
    availabilityZone: 'us-west-2a',
    ...(i === 2 || i === 8 ? { tags: { [ROLE]: '1' } } : {}),
  }));
  more[5] = { ...more[5]!, cidr: '10.1.64.0/18', tags: { [ROLE]: '0' } }; // the biggest, drained
  const node = await startEmulatedNode({
    instanceType: 't3.medium',
    seed: 24,
    moreSubnets: more,
    beforeNodeSubnet: true,
  });
  node.setFaults({ pageItems: 2, actions: ['DescribeSubnets'] });
  const { manager } = await discoveryManager(node, false);
  await settle(manager);
  for (let i = 0; i < 5; i++) assert.ok(manager.allocate(`vpcnet/p${i}/eth0`), `pod ${i}`);
  assert.deepEqual(await settle(manager), ['attachEni', 'assign']);
  const enis = await attached(node);
  assert.deepEqual(
    enis.map((e) => e.subnetId),
    ['subnet-0ipam', more[2]!.subnetId],
    'the tagged subnet listed first of the two equal ones; not the bigger one tagged 0',
  );
  assert.equal(manager.health().growth.blocked, null);
});

test('prefix mode: the node subnet without a free /28 sends the prefixes to a new ENI in the next tagged subnet, with no fallback to secondary IPs', async () => {
  const pods: SubnetSpec = {
    subnetId: 'subnet-0pods00000000000',
    cidr: '10.1.64.0/20',
    availabilityZone: 'us-west-2a',
    tags: { [ROLE]: '1' },
  };
  const node = await startEmulatedNode({ instanceType: 't3.medium', seed: 28, moreSubnets: [pods] });
  const frag = await fetch(`${node.url}/admin/subnets/subnet-0ipam/fragmentation`, { method: 'POST' });
  assert.equal(frag.status, 200);
  const { manager, logs } = await discoveryManager(node, true);
  await settle(manager);
  const enis = await attached(node);
  assert.deepEqual(
    enis.map((e) => [e.subnetId, e.ipv4Prefixes.length, e.secondaryIps.length]),
    [
      ['subnet-0ipam', 0, 0],
      [pods.subnetId, 1, 0],
    ],
  );
  assert.equal(manager.prefixMode().mode, 'prefixes');
  assert.equal(manager.prefixMode().fallbacks, 0);
  assert.ok(
    logs.some(
      (l) => l.startsWith('warn the subnet of this ENI has no free /28 prefix') && l.includes('subnet-0ipam'),
    ),
    logs.join('\n'),
  );
  const got = manager.allocate('vpcnet/p0/eth0');
  assert.equal(got?.eni.subnetId, pods.subnetId);
});

test('prefix mode: when no other subnet is offered, the pool falls back to secondary IPs on the node subnet', async () => {
  const node = await startEmulatedNode({ instanceType: 't3.medium', seed: 29 });
  const frag = await fetch(`${node.url}/admin/subnets/subnet-0ipam/fragmentation`, { method: 'POST' });
  assert.equal(frag.status, 200);
  const { manager } = await discoveryManager(node, true);
  await settle(manager);
  assert.equal(manager.prefixMode().mode, 'secondaryIpFallback');
  assert.equal(manager.health().growth.blocked, null);
  const enis = await attached(node);
  assert.deepEqual(
    enis.map((e) => [e.subnetId, e.ipv4Prefixes.length]),
    enis.map(() => ['subnet-0ipam', 0]),
  );
  assert.ok(
    enis.every((e) => e.secondaryIps.length > 0),
    'secondary IPs, sized as WARM_PREFIX_TARGET asks',
  );
});
