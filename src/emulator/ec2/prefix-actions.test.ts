// Prefix delegation through the real @aws-sdk/client-ec2 client (its serializer and parser agree
// with EC2's wire format): Ipv4PrefixCount, Ipv4Prefix.N, ipv4PrefixSet, InsufficientCidrBlocks.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AssignPrivateIpAddressesCommand,
  DescribeNetworkInterfacesCommand,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { parseCidr } from '../../infra/ipv4.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function primaryEniOf(instanceType: string): Promise<string> {
  const node = await t.emulator.launchInstance({ instanceType, subnetId: SUBNET_A });
  return node.primaryEni.eniId;
}

async function prefixesOf(eniId: string): Promise<string[]> {
  const out = await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }));
  return (out.NetworkInterfaces?.[0]?.Ipv4Prefixes ?? []).map((p) => p.Ipv4Prefix!);
}

async function fragmentation(method: 'POST' | 'DELETE'): Promise<void> {
  const res = await fetch(`${t.url}/admin/subnets/${SUBNET_A}/fragmentation`, { method });
  assert.equal(res.status, 200);
}

test('Ipv4PrefixCount delegates aligned /28 prefixes that describes list as Ipv4Prefixes', async () => {
  const eniId = await primaryEniOf('t3.medium');
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 2 }),
  );
  const prefixes = (out.AssignedIpv4Prefixes ?? []).map((p) => p.Ipv4Prefix!);
  assert.equal(prefixes.length, 2);
  for (const p of prefixes) {
    const cidr = parseCidr(p);
    assert.equal(cidr.prefixLength, 28);
    assert.equal(cidr.network % 16, 0);
  }
  assert.deepEqual(await prefixesOf(eniId), prefixes);
  assert.deepEqual(out.AssignedPrivateIpAddresses ?? [], []);
});

test('each prefix takes one address slot: a t3.medium ENI holds 5 prefixes beside its primary', async () => {
  const eniId = await primaryEniOf('t3.medium');
  await t.ec2.send(new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 4 }));
  await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, SecondaryPrivateIpAddressCount: 1 }),
  );
  await assert.rejects(
    t.ec2.send(new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 1 })),
    (e: unknown) => (e as { name?: string }).name === 'PrivateIpAddressLimitExceeded',
  );
  assert.equal((await prefixesOf(eniId)).length, 4);
});

test('Ipv4Prefix.N unassigns the prefixes and returns their addresses to the subnet', async () => {
  const eniId = await primaryEniOf('t3.medium');
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 2 }),
  );
  const [first, second] = (out.AssignedIpv4Prefixes ?? []).map((p) => p.Ipv4Prefix!);
  await t.ec2.send(
    new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4Prefixes: [first!] }),
  );
  assert.deepEqual(await prefixesOf(eniId), [second]);
  const again = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 1 }),
  );
  assert.equal(again.AssignedIpv4Prefixes?.[0]?.Ipv4Prefix, first, 'the freed block is the lowest again');
});

test('a fragmented subnet answers InsufficientCidrBlocks for prefixes but still assigns single addresses', async () => {
  const eniId = await primaryEniOf('m5.large');
  await fragmentation('POST');
  try {
    await assert.rejects(
      t.ec2.send(new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 1 })),
      (e: unknown) => (e as { name?: string }).name === 'InsufficientCidrBlocks',
    );
    const ips = await t.ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, SecondaryPrivateIpAddressCount: 2 }),
    );
    assert.equal(ips.AssignedPrivateIpAddresses?.length, 2);
    assert.deepEqual(await prefixesOf(eniId), []);
  } finally {
    await fragmentation('DELETE');
  }
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, Ipv4PrefixCount: 1 }),
  );
  assert.equal(out.AssignedIpv4Prefixes?.length, 1, 'prefixes come back once the shortage ends');
});

test('asking for addresses and prefixes in one call is refused', async () => {
  const eniId = await primaryEniOf('m5.large');
  await assert.rejects(
    t.ec2.send(
      new AssignPrivateIpAddressesCommand({
        NetworkInterfaceId: eniId,
        Ipv4PrefixCount: 1,
        SecondaryPrivateIpAddressCount: 1,
      }),
    ),
    (e: unknown) => (e as { name?: string }).name === 'InvalidParameterValue',
  );
});
