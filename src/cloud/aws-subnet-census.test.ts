// The AWS driver's census reads and named assignments against the emulator over HTTP: our own
// Query client's GetSubnetCidrReservations, DescribeNetworkInterfaces by subnet (every page), and
// AssignPrivateIpAddresses with PrivateIpAddress.N.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LaunchedInstance } from '../emulator/api.ts';
import {
  SUBNET_A,
  SUBNET_OTHER_AZ,
  startTestEmulator,
  type TestEmulator,
} from '../emulator/testing/test-emulator.ts';
import type { AwsCloud } from './aws.ts';
import { CloudError } from './cloud.ts';
import { awsCloudOn } from './testing/emulator-cloud.ts';

let t: TestEmulator;
let node: LaunchedInstance;
let cloud: AwsCloud;

before(async () => {
  t = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
  node = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
  cloud = await awsCloudOn(t.url);
});
after(() => t.close());

async function admin(method: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${t.url}${path}`, { method, body: JSON.stringify(body) });
  assert.ok(res.status < 300, await res.text());
}

test('subnetCidrReservations reads every IPv4 reservation of the subnet', async () => {
  await admin('POST', `/admin/subnets/${SUBNET_OTHER_AZ}/cidr-reservations`, {
    cidr: '10.0.2.64/26',
    type: 'prefix',
  });
  await admin('POST', `/admin/subnets/${SUBNET_OTHER_AZ}/cidr-reservations`, {
    cidr: '10.0.2.200/29',
    type: 'explicit',
  });
  const got = await cloud.subnetCidrReservations(SUBNET_OTHER_AZ);
  assert.deepEqual(
    got.map((r) => [r.cidr, r.type]),
    [
      ['10.0.2.64/26', 'prefix'],
      ['10.0.2.200/29', 'explicit'],
    ],
  );
  assert.deepEqual(await cloud.subnetCidrReservations(SUBNET_A), []);
});

test('describeSubnetAddressUse lists what every ENI of the subnet holds, over every page', async () => {
  await admin('POST', `/admin/subnets/${SUBNET_A}/pre-fragmentation`, {
    seed: 3,
    tenantEnis: 3,
    addressesPerEni: 2,
    prefixesPerEni: 1,
  });
  const eni = node.primaryEni.eniId;
  await cloud.assignPrivateIps(eni, 2);
  const use = await cloud.describeSubnetAddressUse(SUBNET_A);
  assert.equal(use.enis, 4, "the node's primary ENI and three tenants'");
  assert.equal(use.addresses.length, 3 + 3 * 2 + 1 + 2);
  assert.equal(use.prefixes.length, 3);
  assert.ok(use.addresses.includes(node.primaryEni.primaryIp));
  // EC2 may answer in short pages; every page is read.
  t.emulator.setFaults({ pageItems: 1, actions: ['DescribeNetworkInterfaces'] });
  try {
    assert.deepEqual(await cloud.describeSubnetAddressUse(SUBNET_A), use);
  } finally {
    t.emulator.setFaults({});
  }
  const lines = t.logs.filter((l) => l.action === 'DescribeNetworkInterfaces' && l.subnetId === SUBNET_A);
  assert.equal(lines.length, 1 + 4, 'one call unpaged, four of one ENI each');
});

test('assignNamedPrivateIps assigns exactly the named addresses; a taken one is InvalidParameterValue', async () => {
  const eni = node.primaryEni.eniId;
  const got = await cloud.assignNamedPrivateIps(eni, ['10.0.0.200', '10.0.0.201']);
  assert.deepEqual(got, ['10.0.0.200', '10.0.0.201']);
  const described = await cloud.describeInstanceEnis(node.instanceId);
  assert.ok(described[0]?.secondaryIps.includes('10.0.0.201'));
  await assert.rejects(cloud.assignNamedPrivateIps(eni, ['10.0.0.202', '10.0.0.200']), (e: unknown) => {
    assert.ok(e instanceof CloudError);
    assert.equal(e.code, 'InvalidParameterValue');
    assert.match(e.message, /10\.0\.0\.200/);
    return true;
  });
  const after = await cloud.describeInstanceEnis(node.instanceId);
  assert.equal(after[0]?.secondaryIps.includes('10.0.0.202'), false, 'all or nothing');
  await assert.rejects(cloud.assignNamedPrivateIps(eni, []), { code: 'InvalidParameterValue' });
});

test('a named primary IP and named /28s are assigned as named; taken ones are InvalidIPAddress.InUse and InvalidParameterValue', async () => {
  const eni = await cloud.createEni(
    SUBNET_A,
    ['sg-1'],
    'named',
    undefined,
    undefined,
    undefined,
    '10.0.0.230',
  );
  assert.equal(eni.primaryIp, '10.0.0.230');
  await assert.rejects(
    cloud.createEni(SUBNET_A, ['sg-1'], 'named again', undefined, undefined, undefined, '10.0.0.230'),
    (e: unknown) => e instanceof CloudError && e.code === 'InvalidIPAddress.InUse',
  );
  const free = (await (await fetch(`${t.url}/admin/subnets/${SUBNET_A}/capacity`)).json()) as {
    freePrefixes: string[];
  };
  const whole = free.freePrefixes[0]!;
  assert.deepEqual(await cloud.assignNamedIpv4Prefixes(node.primaryEni.eniId, [whole]), [whole]);
  await assert.rejects(
    cloud.assignNamedIpv4Prefixes(node.primaryEni.eniId, ['10.0.0.224/28']),
    (e: unknown) =>
      e instanceof CloudError && e.code === 'InvalidParameterValue' && /10\.0\.0\.230/.test(e.message),
  );
});
