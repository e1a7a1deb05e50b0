// GetSubnetCidrReservations and the tenant admin routes through the real @aws-sdk/client-ec2
// client (its parser agrees with EC2's wire format).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DescribeNetworkInterfacesCommand, GetSubnetCidrReservationsCommand } from '@aws-sdk/client-ec2';
import { SUBNET_A, SUBNET_OTHER_AZ, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

/** The fields of the admin answers these tests read. */
interface Reply {
  readonly reservationId: string;
  readonly cidr: string;
  readonly enis: number;
  readonly freePrefixes: number | readonly string[];
  readonly freeAddresses: number;
  readonly removed: number;
  readonly available: number;
  readonly message: string;
  readonly code: string;
}

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: Reply }> {
  const res = await fetch(`${t.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Reply };
}

test('GetSubnetCidrReservations lists a subnet reservations as the SDK reads them, filtered and paged', async () => {
  const prefix = await admin('POST', `/admin/subnets/${SUBNET_A}/cidr-reservations`, {
    cidr: '10.0.0.128/26',
    type: 'prefix',
    description: 'pods',
  });
  assert.equal(prefix.status, 201);
  await admin('POST', `/admin/subnets/${SUBNET_A}/cidr-reservations`, {
    cidr: '10.0.0.64/28',
    type: 'explicit',
  });
  const out = await t.ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: SUBNET_A }));
  assert.deepEqual(
    out.SubnetIpv4CidrReservations?.map((r) => [r.Cidr, r.ReservationType, r.SubnetId, r.Description]),
    [
      ['10.0.0.128/26', 'prefix', SUBNET_A, 'pods'],
      ['10.0.0.64/28', 'explicit', SUBNET_A, ''],
    ],
  );
  assert.match(out.SubnetIpv4CidrReservations?.[0]?.SubnetCidrReservationId ?? '', /^scr-/);
  assert.deepEqual(out.SubnetIpv6CidrReservations ?? [], []);
  const onlyPrefix = await t.ec2.send(
    new GetSubnetCidrReservationsCommand({
      SubnetId: SUBNET_A,
      Filters: [{ Name: 'reservationType', Values: ['prefix'] }],
    }),
  );
  assert.equal(onlyPrefix.SubnetIpv4CidrReservations?.length, 1);
  const page = await t.ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: SUBNET_A, MaxResults: 5 }));
  assert.equal(page.NextToken, undefined);
  const other = await t.ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: SUBNET_OTHER_AZ }));
  assert.deepEqual(other.SubnetIpv4CidrReservations ?? [], []);
  await assert.rejects(
    t.ec2.send(new GetSubnetCidrReservationsCommand({ SubnetId: 'subnet-0nope' })),
    (e: unknown) => (e as { name?: string }).name === 'InvalidSubnetID.NotFound',
  );
  const gone = await admin('DELETE', `/admin/cidr-reservations/${prefix.json.reservationId}`);
  assert.equal(gone.json.cidr, '10.0.0.128/26');
});

test('tenant ENIs of a pre-fragmentation are what DescribeNetworkInterfaces filtered by subnet lists', async () => {
  const summary = await admin('POST', `/admin/subnets/${SUBNET_OTHER_AZ}/pre-fragmentation`, {
    seed: 5,
    tenantEnis: 4,
    addressesPerEni: 3,
    prefixesPerEni: 1,
  });
  assert.equal(summary.status, 200, JSON.stringify(summary.json));
  assert.equal(summary.json.enis, 4);
  const out = await t.ec2.send(
    new DescribeNetworkInterfacesCommand({ Filters: [{ Name: 'subnet-id', Values: [SUBNET_OTHER_AZ] }] }),
  );
  const listed = out.NetworkInterfaces ?? [];
  assert.equal(listed.length, 4);
  assert.equal(listed.flatMap((e) => e.PrivateIpAddresses ?? []).length, 4 * 4);
  assert.equal(listed.flatMap((e) => e.Ipv4Prefixes ?? []).length, 4);
  const truth = await admin('GET', `/admin/subnets/${SUBNET_OTHER_AZ}/capacity`);
  assert.equal((truth.json.freePrefixes as readonly string[]).length, summary.json.freePrefixes);
  assert.equal(truth.json.freeAddresses, 256 - 5 - 4 * 4 - 4 * 16);
  const line = t.logs.findLast((l) => l.action === 'DescribeNetworkInterfaces');
  assert.equal(line?.subnetId, SUBNET_OTHER_AZ, 'the log names the subnet a describe was for');
  const removed = await admin('DELETE', `/admin/subnets/${SUBNET_OTHER_AZ}/tenants`, {});
  assert.equal(removed.json.removed, 4);
  assert.equal(removed.json.available, 256 - 5);
});

test('tenant routes refuse what they cannot do, naming the field', async () => {
  const bad = await admin('POST', `/admin/subnets/${SUBNET_A}/pre-fragmentation`, { seed: -1 });
  assert.equal(bad.status, 400);
  assert.match(bad.json.message, /seed/);
  const overlap = await admin('POST', `/admin/subnets/${SUBNET_A}/cidr-reservations`, {
    cidr: '10.9.0.0/28',
    type: 'prefix',
  });
  assert.equal(overlap.status, 400);
  assert.equal(overlap.json.code, 'InvalidParameterValue');
});
