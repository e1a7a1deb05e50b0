import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { VpcSpec } from '../api.ts';
import { IdSource, seededRandom } from './ids.ts';
import { VpcState } from './state.ts';
import { addTenantAddresses, fragmentEveryBlock, preFragment, removeTenants, TENANT_TAG } from './tenants.ts';

const VPC: VpcSpec = {
  vpcId: 'vpc-1',
  cidr: '10.1.0.0/16',
  region: 'us-west-2',
  subnets: [{ subnetId: 'subnet-frag', cidr: '10.1.0.0/20', availabilityZone: 'us-west-2a' }],
};
const SUBNET = 'subnet-frag';

function fresh(): VpcState {
  return new VpcState(VPC, new IdSource(seededRandom(1)));
}

const SEEDED = {
  seed: 11,
  tenantEnis: 40,
  addressesPerEni: 5,
  prefixesPerEni: 1,
  reservations: [
    { cidr: '10.1.8.0/24', type: 'prefix' as const },
    { cidr: '10.1.9.0/26', type: 'explicit' as const },
  ],
};

test('a seeded pre-fragmentation leaves tenant ENIs and reservations EC2 shows, the same for the same seed', () => {
  const a = fresh();
  const summary = preFragment(a, SUBNET, SEEDED);
  assert.equal(summary.enis, 40);
  assert.equal(summary.addresses, 40 * 6);
  assert.equal(summary.prefixes, 40);
  assert.equal(summary.reservations.length, 2);
  const tenants = a.enis().filter((e) => e.tags.get(TENANT_TAG) === 'seed-11');
  assert.equal(tenants.length, 40);
  // Every address the subnet holds is one some ENI lists: nothing hides from a census.
  const held = tenants.flatMap((e) => [e.primaryIp, ...e.secondaryIps]);
  assert.equal(new Set(held).size, held.length);
  const pool = a.subnet(SUBNET);
  assert.equal(pool.availableCount, 4096 - 5 - 40 * 6 - 40 * 16);
  // Random picks spread over the subnet: far fewer whole /28s than the count alone would leave.
  const cleanIfDense = Math.floor((4096 - 5 - 40 * 6) / 16) - 40;
  assert.ok(summary.freePrefixes < cleanIfDense / 2, `${summary.freePrefixes} free /28s`);
  // The prefix reservation is untouched by /32s and served the tenants' prefixes first.
  const inPrefixReservation = held.filter((ip) => ip.startsWith('10.1.8.'));
  assert.deepEqual(inPrefixReservation, []);
  assert.ok(tenants.some((e) => e.ipv4Prefixes.some((p) => p.startsWith('10.1.8.'))));
  const b = fresh();
  assert.deepEqual(preFragment(b, SUBNET, SEEDED), summary);
  assert.deepEqual(b.subnet(SUBNET).freePrefixBlocks(), pool.freePrefixBlocks());
});

test('after a pre-fragmentation the subnet keeps picking addresses by count at random', () => {
  const state = fresh();
  preFragment(state, SUBNET, { seed: 3 });
  const { primaryEni } = state.launch({ instanceType: 'm5.large', subnetId: SUBNET });
  const ips = state.assign(primaryEni.eniId, { count: 5 });
  assert.notDeepEqual(ips, ['10.1.0.5', '10.1.0.6', '10.1.0.7', '10.1.0.8', '10.1.0.9']);
});

test('fragmentEveryBlock breaks every /28 with one tenant ENI; removing it gives them back', () => {
  const state = fresh();
  const taken = fragmentEveryBlock(state, SUBNET);
  assert.equal(taken, 256);
  const pool = state.subnet(SUBNET);
  assert.deepEqual(pool.freePrefixBlocks(), []);
  assert.throws(() => pool.allocatePrefix(), { code: 'InsufficientCidrBlocks' });
  assert.equal(state.enis().length, 1, 'one ENI holds them all, so DescribeNetworkInterfaces lists them');
  assert.equal(removeTenants(state, SUBNET, 'fragmentation'), 1);
  assert.equal(pool.freePrefixBlocks().length, 254);
});

test('tenant addresses fill a subnet until CreateNetworkInterface refuses; removing them returns capacity', () => {
  const state = new VpcState(
    { ...VPC, subnets: [{ subnetId: 'subnet-tiny', cidr: '10.1.0.0/27', availabilityZone: 'us-west-2a' }] },
    new IdSource(seededRandom(1)),
  );
  assert.equal(addTenantAddresses(state, 'subnet-tiny', 27, 'fill'), 27);
  assert.throws(() => addTenantAddresses(state, 'subnet-tiny', 1, 'fill'), {
    code: 'InsufficientFreeAddressesInSubnet',
  });
  assert.equal(removeTenants(state, 'subnet-tiny', 'other'), 0);
  assert.equal(removeTenants(state, 'subnet-tiny'), 27);
  assert.equal(state.subnet('subnet-tiny').availableCount, 27);
});

test('CIDR reservations are checked as EC2 checks them', () => {
  const state = fresh();
  assert.throws(() => state.reserveCidr(SUBNET, '10.2.0.0/24', 'prefix'), { code: 'InvalidParameterValue' });
  assert.throws(() => state.reserveCidr(SUBNET, '10.1.0.0/30', 'prefix'), { code: 'InvalidParameterValue' });
  assert.throws(() => state.reserveCidr(SUBNET, '10.1.0.0/24', 'both'), { code: 'InvalidParameterValue' });
  const r = state.reserveCidr(SUBNET, '10.1.0.7/24', 'explicit', 'db');
  assert.equal(r.cidr, '10.1.0.0/24');
  assert.match(r.reservationId, /^scr-[0-9a-f]{17}$/);
  assert.throws(() => state.reserveCidr(SUBNET, '10.1.0.128/25', 'prefix'), {
    code: 'InvalidParameterValue',
  });
  assert.equal(state.deleteCidrReservation(r.reservationId).cidr, '10.1.0.0/24');
  assert.throws(() => state.deleteCidrReservation(r.reservationId), {
    code: 'InvalidSubnetCidrReservationID.NotFound',
  });
});

test('tenant addresses come on ENIs of perEni addresses each', () => {
  const state = fresh();
  assert.equal(addTenantAddresses(state, SUBNET, 450, 'fill', 200), 450);
  const enis = state.enis().filter((e) => e.tags.get(TENANT_TAG) === 'fill');
  assert.deepEqual(
    enis.map((e) => 1 + e.secondaryIps.length),
    [200, 200, 50],
  );
});
