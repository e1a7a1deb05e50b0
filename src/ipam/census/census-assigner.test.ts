import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { EniRegistry } from '../enis/eni-registry.ts';
import { AddressPool } from '../pool/pool.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { FixedCensus } from '../testing/fixed-census.ts';
import { CensusAssigner } from './census-assigner.ts';
import { censusOf } from './subnet-census.ts';

const quiet = { info() {}, warn() {}, error() {} };

/** A node whose census was read now: only what the fake cloud holds so far is held. */
function setUp(places = true) {
  const cloud = new FakeCloud({ limits: { maxEnis: 3, ipsPerEni: 30 } });
  const pool = new AddressPool({ cooldownMs: 0 });
  const census = new FixedCensus(places);
  const held = [...cloud.enis.values()].flatMap((e) => [e.primaryIp, ...e.secondaryIps]);
  census.set(
    censusOf({
      subnetId: 'subnet-1',
      cidr: '10.0.0.0/24',
      takenAt: 1,
      addresses: held,
      prefixes: [],
      reservations: [],
    }),
  );
  const registry = new EniRegistry({ now: () => 0 });
  const singles = new CensusAssigner({ cloud, pool, registry, log: quiet }, census, () => 0.5);
  return { cloud, registry, singles };
}

/** The /28 an address is in, as text. */
const blockOf = (ip: string) => `10.0.0.${Number(ip.split('.')[3]) & ~15}/28`;
/** The census's broken blocks: AWS's .0-.3 and the fake's primary .10 break .0/28, the broadcast .240/28. */
const BROKEN = new Set(['10.0.0.0/28', '10.0.0.240/28']);

test('secondary IPs are named inside a /28 that is broken already, not picked by EC2', async () => {
  const { cloud, singles } = setUp();
  const ips = await singles.assign('eni-primary', 'subnet-1', 3);
  assert.equal(ips.length, 3);
  assert.equal(new Set(ips.map(blockOf)).size, 1, 'one block, filled in order');
  assert.ok(BROKEN.has(blockOf(ips[0]!)), ips.join());
  assert.deepEqual(
    cloud.calls.filter((c) => c.startsWith('assign')),
    [`assignNamedPrivateIps eni-primary ${ips.join(',')}`],
  );
  assert.deepEqual(singles.figures(), {
    named: 3,
    collisions: 0,
    counted: 0,
    namedPrefixes: 0,
    namedPrimaries: 0,
  });
});

test('an address someone took since the census is refused by EC2; its /28 is set aside and the next one named', async () => {
  const { cloud, singles } = setUp();
  const first = singles.primaryIpFor('subnet-1')?.ip ?? '';
  const other = cloud.attachForeignEni({ deviceIndex: 1 });
  await cloud.assignNamedPrivateIps(other, [first]); // another node, after the census was read
  const ips = await singles.assign('eni-primary', 'subnet-1', 2);
  assert.ok(
    ips.every((ip) => blockOf(ip) !== blockOf(first)),
    `${ips.join()} avoid ${blockOf(first)}`,
  );
  assert.ok(
    ips.every((ip) => BROKEN.has(blockOf(ip))),
    'the other broken block before any whole one',
  );
  assert.deepEqual(singles.figures(), {
    named: 2,
    collisions: 1,
    counted: 0,
    namedPrefixes: 0,
    namedPrimaries: 0,
  });
});

test('after three refusals in a row the addresses are asked by count', async () => {
  const { cloud, singles } = setUp();
  const refused = new CloudError('An address is in use', 'InvalidParameterValue', false);
  cloud.failNext('assignNamedPrivateIps', refused, 3);
  const ips = await singles.assign('eni-primary', 'subnet-1', 2);
  assert.equal(ips.length, 2);
  assert.equal(cloud.calls.filter((c) => c.startsWith('assignNamedPrivateIps')).length, 3);
  assert.deepEqual(singles.figures(), {
    named: 0,
    collisions: 3,
    counted: 2,
    namedPrefixes: 0,
    namedPrimaries: 0,
  });
});

test('other failures are the caller’s; without a census (or only reporting one) EC2 picks', async () => {
  const { cloud, singles } = setUp();
  cloud.failNext('assignNamedPrivateIps', new CloudError('no room', 'PrivateIpAddressLimitExceeded', false));
  await assert.rejects(singles.assign('eni-primary', 'subnet-1', 1), {
    code: 'PrivateIpAddressLimitExceeded',
  });
  const reporting = setUp(false);
  await reporting.singles.assign('eni-primary', 'subnet-1', 2);
  assert.deepEqual(
    reporting.cloud.calls.filter((c) => c.startsWith('assign')),
    ['assignPrivateIps eni-primary 2'],
  );
  await singles.assign('eni-primary', 'subnet-unknown', 1);
  assert.ok(cloud.calls.includes('assignPrivateIps eni-primary 1'));
});

test('prefixes are named among the whole /28s the census shows, at random; none shown means no call', async () => {
  const { singles } = setUp();
  const got = await singles.assignPrefixes('eni-primary', 'subnet-1', 2);
  assert.equal(got.kind, 'assigned');
  const prefixes = got.kind === 'assigned' ? got.prefixes : [];
  assert.equal(prefixes.length, 2);
  for (const p of prefixes) assert.match(p, /^10\.0\.0\.\d+\/28$/);
  assert.ok(!prefixes.includes('10.0.0.0/28'), 'never a block that holds an address');
  // A /24 whose every whole block is held: the census says none, and EC2 is not asked.
  const full = setUp();
  const held = Array.from({ length: 16 }, (_, i) => `10.0.0.${i * 16 + 8}`);
  const census = new FixedCensus();
  census.set(
    censusOf({
      subnetId: 'subnet-1',
      cidr: '10.0.0.0/24',
      takenAt: 1,
      addresses: held,
      prefixes: [],
      reservations: [],
    }),
  );
  const none = await new CensusAssigner(
    {
      cloud: full.cloud,
      pool: new AddressPool({ cooldownMs: 0 }),
      registry: new EniRegistry({ now: () => 0 }),
      log: quiet,
    },
    census,
  ).assignPrefixes('eni-primary', 'subnet-1', 1);
  assert.equal(none.kind, 'none');
  assert.deepEqual(
    full.cloud.calls.filter((c) => c.includes('Prefixes')),
    [],
  );
  assert.equal(
    (
      await new CensusAssigner(
        {
          cloud: full.cloud,
          pool: new AddressPool({ cooldownMs: 0 }),
          registry: new EniRegistry({ now: () => 0 }),
          log: quiet,
        },
        undefined,
      ).assignPrefixes('eni-primary', 'subnet-1', 1)
    ).kind,
    'noCensus',
  );
});

test('a new ENI’s primary IP is named inside a broken /28; a refusal sets that /28 aside', async () => {
  const { singles } = setUp();
  const first = singles.primaryIpFor('subnet-1');
  assert.ok(BROKEN.has(blockOf(first?.ip ?? '')));
  first?.refused(new CloudError('The specified address is already in use.', 'InvalidIPAddress.InUse', false));
  const second = singles.primaryIpFor('subnet-1');
  assert.ok(BROKEN.has(blockOf(second?.ip ?? '')));
  assert.notEqual(blockOf(second?.ip ?? ''), blockOf(first?.ip ?? ''));
  second?.used();
  assert.equal(singles.figures().namedPrimaries, 1);
  assert.equal(singles.primaryIpFor('subnet-unknown'), undefined, 'no census: EC2 picks');
});

test('a new ENI’s named primary IP is not named again as a secondary while the census predates it', async () => {
  const { cloud, registry, singles } = setUp();
  const primary = singles.primaryIpFor('subnet-1');
  assert.ok(primary !== undefined);
  const eni = await cloud.createEni('subnet-1', [], 'vpcnet', {}, undefined, undefined, primary.ip);
  primary.used();
  // As pool growth does: attached and in the registry before it asks for its secondary IPs.
  await cloud.attachEni(eni.eniId, cloud.meta.instanceId, 1);
  const attached = await cloud.describeInstanceEnis(cloud.meta.instanceId);
  registry.add(attached.find((e) => e.eniId === eni.eniId)!, 'configuring', { createdByVpcnet: true });
  const ips = await singles.assign(eni.eniId, 'subnet-1', 4);
  assert.equal(ips.includes(primary.ip), false, `${primary.ip} is the ENI's own primary IP`);
  assert.equal(singles.figures().collisions, 0, 'no call EC2 had to refuse');
});
