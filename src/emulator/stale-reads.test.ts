import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AssignPrivateIpAddressesCommand,
  DescribeNetworkInterfacesCommand,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { StaleReadHistory } from './stale-reads.ts';
import { SUBNET_A, startTestEmulator, TEST_VPC } from './testing/test-emulator.ts';
import { IdSource, seededRandom } from './vpc/ids.ts';
import { VpcState } from './vpc/state.ts';

test('a stale view shows the VPC as it was staleMs ago, never before the fault was switched on', () => {
  let now = 0;
  const state = new VpcState(TEST_VPC, new IdSource(seededRandom(2)));
  const history = new StaleReadHistory(state, () => now);
  const { primaryEni } = state.launch({ instanceType: 'm5.large', subnetId: SUBNET_A });
  now = 1000;
  history.reset(500);
  now = 1100;
  const [first] = state.assign(primaryEni.eniId, { count: 1 });
  now = 1300;
  const [second] = state.assign(primaryEni.eniId, { count: 1 });
  now = 1400;
  const seen = (ms: number) => history.view(ms).eni(primaryEni.eniId).secondaryIps;
  assert.deepEqual(seen(0), [first, second]);
  assert.deepEqual(seen(200), [first]); // t=1200
  assert.deepEqual(seen(350), []); // t=1050
  assert.deepEqual(seen(900), []); // before the switch-on: the oldest snapshot
  now = 1900;
  assert.deepEqual(seen(500), [first, second]); // t=1400
});

test('a snapshot is not changed by later changes to the live state', () => {
  const state = new VpcState(TEST_VPC, new IdSource(seededRandom(2)));
  const { primaryEni } = state.launch({ instanceType: 'm5.large', subnetId: SUBNET_A });
  const snap = state.snapshot();
  state.assign(primaryEni.eniId, { count: 2 });
  state.createTags([primaryEni.eniId], new Map([['k', 'v']]));
  assert.deepEqual(snap.eni(primaryEni.eniId).secondaryIps, []);
  assert.equal(snap.eni(primaryEni.eniId).tags.size, 0);
});

test('with staleReadMs, Describe and IMDS lag behind an assign, then catch up', async () => {
  let caller: string | undefined;
  // The emulator's clock moves only when the test says: no read can land outside the window.
  let now = 1_000_000;
  const t = await startTestEmulator({ imdsFallbackInstance: () => caller, nowMs: () => now });
  try {
    const inst = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
    caller = inst.instanceId;
    const token = await (
      await fetch(`${t.url}/latest/api/token`, {
        method: 'PUT',
        headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
      })
    ).text();
    const imdsAddresses = async () =>
      (
        await (
          await fetch(
            `${t.url}/latest/meta-data/network/interfaces/macs/${inst.primaryEni.mac}/local-ipv4s`,
            {
              headers: { 'x-aws-ec2-metadata-token': token },
            },
          )
        ).text()
      ).split('\n');
    t.emulator.setFaults({ staleReadMs: 300, imds: true });
    now += 100;
    const out = await t.ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: inst.primaryEni.eniId,
        SecondaryPrivateIpAddressCount: 1,
      }),
    );
    const ip = out.AssignedPrivateIpAddresses?.[0]?.PrivateIpAddress;
    const addresses = async () =>
      (
        await t.ec2.send(
          new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [inst.primaryEni.eniId] }),
        )
      ).NetworkInterfaces?.[0]?.PrivateIpAddresses?.map((a) => a.PrivateIpAddress);
    assert.deepEqual(await addresses(), [inst.primaryEni.primaryIp]);
    assert.deepEqual(await imdsAddresses(), [inst.primaryEni.primaryIp]);
    now += 299;
    assert.deepEqual(await addresses(), [inst.primaryEni.primaryIp], 'caught up before the window ended');
    assert.deepEqual(await imdsAddresses(), [inst.primaryEni.primaryIp]);
    now += 1;
    assert.deepEqual(await addresses(), [inst.primaryEni.primaryIp, ip]);
    assert.deepEqual(await imdsAddresses(), [inst.primaryEni.primaryIp, ip]);
  } finally {
    await t.close();
  }
});

test('IMDS and EC2 lag separately: each can show an address the other no longer has', async () => {
  let caller: string | undefined;
  let now = 5_000_000;
  const t = await startTestEmulator({ imdsFallbackInstance: () => caller, nowMs: () => now });
  try {
    const inst = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
    caller = inst.instanceId;
    const eniId = inst.primaryEni.eniId;
    const token = await (
      await fetch(`${t.url}/latest/api/token`, {
        method: 'PUT',
        headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '600' },
      })
    ).text();
    const imds = async () =>
      (
        await (
          await fetch(
            `${t.url}/latest/meta-data/network/interfaces/macs/${inst.primaryEni.mac}/local-ipv4s`,
            {
              headers: { 'x-aws-ec2-metadata-token': token },
            },
          )
        ).text()
      )
        .split('\n')
        .slice(1);
    const ec2 = async () =>
      (
        await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }))
      ).NetworkInterfaces?.[0]?.PrivateIpAddresses?.filter((a) => a.Primary !== true).map(
        (a) => a.PrivateIpAddress,
      );
    const assigned = await t.ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, SecondaryPrivateIpAddressCount: 2 }),
    );
    const [a, b] = (assigned.AssignedPrivateIpAddresses ?? []).map((x) => x.PrivateIpAddress);

    // IMDS lags EC2: after an unassign, IMDS still shows the address EC2 no longer has.
    t.emulator.setFaults({ imdsStaleReadMs: 300 });
    now += 10;
    await t.ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [a!] }),
    );
    assert.deepEqual(await ec2(), [b]);
    assert.deepEqual(await imds(), [a, b]);
    now += 300;
    assert.deepEqual(await imds(), [b], 'IMDS caught up once the lag passed');

    // EC2 lags, IMDS does not: EC2 still shows the address IMDS no longer has.
    t.emulator.setFaults({ staleReadMs: 300 });
    now += 10;
    await t.ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [b!] }),
    );
    assert.deepEqual(await ec2(), [b]);
    assert.deepEqual(await imds(), []);
    now += 300;
    assert.deepEqual(await ec2(), [], 'EC2 caught up once the lag passed');
  } finally {
    await t.close();
  }
});
