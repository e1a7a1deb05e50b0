// The cluster's census through the real parts: three agents' loops elect one leader on a Lease of
// the emulator's API server, the leader reads EC2 through the AWS driver, the others read the
// Lease. Time is a virtual clock; rounds are driven as the loop would schedule them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AwsCloud } from '../../cloud/aws/aws.ts';
import { awsCloudOn } from '../../cloud/testing/emulator-cloud.ts';
import {
  SUBNET_A,
  SUBNET_OTHER_AZ,
  startTestEmulator,
  type TestEmulator,
} from '../../emulator/testing/test-emulator.ts';
import { silentLogger } from '../../infra/log.ts';
import { KubeClient } from '../../pods/kube-client.ts';
import { KubeLeases, parseLeaseName } from '../../pods/lease/lease.ts';
import { LeaseElection } from '../../pods/lease/lease-election.ts';
import { SubnetCensusLoop } from './subnet-census.ts';

let t: TestEmulator;
let cloud: AwsCloud;
let client: KubeClient;
before(async () => {
  t = await startTestEmulator();
  cloud = await awsCloudOn(t.url);
  client = new KubeClient({ baseUrl: t.url });
});
after(async () => {
  client.close();
  cloud.close();
  await t.close();
});

const T0 = 1_700_000_000_000;

function agents(lease: string, clock: { ms: number }, ...names: string[]): SubnetCensusLoop[] {
  const leases = new KubeLeases(client, parseLeaseName(`kube-system/${lease}`));
  return names.map(
    (identity) =>
      new SubnetCensusLoop({
        election: new LeaseElection({
          leases,
          identity,
          leaseDurationMs: 90_000,
          now: () => T0 + clock.ms,
          monotonic: () => clock.ms,
        }),
        cloud,
        log: silentLogger,
        now: () => T0 + clock.ms,
        places: true,
        random: () => 0.5,
      }),
  );
}

function describesOf(subnetId: string): number {
  return t.logs.filter((l) => l.action === 'DescribeNetworkInterfaces' && l.subnetId === subnetId).length;
}

async function capacity(subnetId: string): Promise<{ freePrefixes: string[]; freeAddresses: number }> {
  return (await (await fetch(`${t.url}/admin/subnets/${subnetId}/capacity`)).json()) as {
    freePrefixes: string[];
    freeAddresses: number;
  };
}

test('one leader censuses what every agent wants; the others read it; one describe per subnet per 5 minutes', async () => {
  await fetch(`${t.url}/admin/subnets/${SUBNET_A}/pre-fragmentation`, {
    method: 'POST',
    body: JSON.stringify({ seed: 2, tenantEnis: 5, addressesPerEni: 3 }),
  });
  const clock = { ms: 0 };
  const [a, b, c] = agents('census-1', clock, 'node-a', 'node-b', 'node-c');
  a!.want(SUBNET_A, '10.0.0.0/24');
  b!.want(SUBNET_A, '10.0.0.0/24');
  b!.want(SUBNET_OTHER_AZ, '10.0.2.0/24');
  c!.want(SUBNET_A, '10.0.0.0/24');
  const before = { a: describesOf(SUBNET_A), other: describesOf(SUBNET_OTHER_AZ) };
  // 15 minutes: the leader every 15 s, the others every 60 s (the loop's own schedule).
  for (clock.ms = 0; clock.ms <= 15 * 60_000; clock.ms += 15_000) {
    await a!.round();
    if (clock.ms % 60_000 === 0) {
      await b!.round();
      await c!.round();
    }
  }
  assert.equal(a!.state().role, 'leader');
  assert.equal(b!.state().role, 'follower');
  const used = { a: describesOf(SUBNET_A) - before.a, other: describesOf(SUBNET_OTHER_AZ) - before.other };
  assert.ok(
    used.a >= 3 && used.a <= 4,
    `${used.a} describes of ${SUBNET_A} in 15 minutes (one per 5 minutes)`,
  );
  assert.ok(used.other >= 2 && used.other <= 4, `${used.other} describes of the subnet B asked for`);
  for (const agent of [a!, b!, c!]) {
    const view = agent.view(SUBNET_A);
    assert.ok(view, 'every agent has the census');
    assert.deepEqual(view.freePrefixBlocks(), (await capacity(SUBNET_A)).freePrefixes);
  }
  assert.ok(c!.view(SUBNET_OTHER_AZ), 'published to all, whoever asked');
});

test('when the leader stops, another takes over within a lease duration and keeps the census period', async () => {
  const clock = { ms: 0 };
  const [a, b] = agents('census-2', clock, 'node-a', 'node-b');
  a!.want(SUBNET_A, '10.0.0.0/24');
  b!.want(SUBNET_A, '10.0.0.0/24');
  await a!.round();
  await b!.round();
  const takenBy = a!.view(SUBNET_A)?.census.takenAt;
  assert.equal(b!.view(SUBNET_A)?.census.takenAt, takenBy);
  const describes = describesOf(SUBNET_A);
  // A stops. B reads every minute; after 90 s without a renewal it takes the Lease.
  for (clock.ms = 60_000; clock.ms <= 180_000; clock.ms += 60_000) await b!.round();
  assert.equal(b!.state().role, 'leader');
  assert.equal(describesOf(SUBNET_A), describes, 'the census A took is not 5 minutes old yet');
  clock.ms = 5 * 60_000 + 1000;
  await b!.round();
  assert.equal(describesOf(SUBNET_A), describes + 1);
  assert.ok((b!.view(SUBNET_A)?.census.takenAt ?? 0) > (takenBy ?? 0));
  // A comes back and follows.
  await a!.round();
  assert.equal(a!.state().role, 'follower');
});

test('a census gone stale is not acted on; the state says so', async () => {
  const clock = { ms: 0 };
  const [a] = agents('census-3', clock, 'node-a');
  a!.want(SUBNET_A, '10.0.0.0/24');
  await a!.round();
  assert.ok(a!.view(SUBNET_A));
  clock.ms = 16 * 60_000;
  assert.equal(a!.view(SUBNET_A), undefined);
  assert.equal(a!.state().subnets[0]?.stale, true);
});

test('a round against an API that refuses is logged once and leaves the last census in place', async () => {
  const warned: string[] = [];
  const failing = new SubnetCensusLoop({
    election: {
      identity: 'node-x',
      round: () => Promise.reject(new Error('GET …/leases/x: 403 Forbidden')),
      amend: () => Promise.resolve(false),
    },
    cloud,
    log: { ...silentLogger, warn: (msg) => warned.push(msg) },
    now: () => T0,
    places: true,
  });
  await failing.round();
  await failing.round();
  assert.equal(warned.length, 1);
  assert.match(failing.state().lastError ?? '', /403/);
});

test('a follower whose subnet has no census yet looks again at the leader pace, then at its own', async () => {
  const clock = { ms: 0 };
  const [leader, follower] = agents('census-pace', clock, 'node-a', 'node-b');
  await leader!.round();
  follower!.want(SUBNET_A, '10.0.0.0/24');
  const asked = await follower!.round();
  assert.equal(asked, 15_000, 'no census of its subnet yet: back after one leader round');
  clock.ms = 15_000;
  await leader!.round();
  clock.ms = 30_000;
  const known = await follower!.round();
  assert.ok(follower!.view(SUBNET_A) !== undefined, 'the leader took the census the follower asked for');
  assert.equal(known, 60_000, 'then the follower round');
});
