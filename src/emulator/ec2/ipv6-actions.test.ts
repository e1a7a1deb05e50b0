// IPv6 on ENIs through the real @aws-sdk/client-ec2 client (its serializer and parser agree with
// EC2's wire format): AssignIpv6Addresses, UnassignIpv6Addresses, Ipv6Prefixes / Ipv6Addresses in
// DescribeNetworkInterfaces, the subnets' IPv6 CIDR blocks, and the IMDS paths.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AssignIpv6AddressesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
  UnassignIpv6AddressesCommand,
} from '@aws-sdk/client-ec2';
import { ipv6CidrContains, parseIpv6, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import {
  SUBNET_A,
  SUBNET_OTHER_AZ,
  SUBNET_SMALL,
  startTestEmulator,
  TEST_VPC_DUAL_STACK,
  type TestEmulator,
} from '../testing/test-emulator.ts';

let t: TestEmulator;
/** The instance IMDS answers for (the test's loopback address is none of its ENIs'). */
let imdsCaller: string | undefined;
before(async () => {
  t = await startTestEmulator({ vpc: TEST_VPC_DUAL_STACK, imdsFallbackInstance: () => imdsCaller });
});
after(() => t.close());

async function primaryEni(subnetId = SUBNET_A): Promise<string> {
  return (await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId })).primaryEni.eniId;
}

async function described(eniId: string) {
  const out = await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }));
  const eni = out.NetworkInterfaces?.[0];
  return {
    prefixes: (eni?.Ipv6Prefixes ?? []).map((p) => p.Ipv6Prefix!),
    addresses: (eni?.Ipv6Addresses ?? []).map((a) => ({ ip: a.Ipv6Address!, primary: a.IsPrimaryIpv6 })),
  };
}

async function codeOf(run: Promise<unknown>): Promise<string | undefined> {
  try {
    await run;
    return undefined;
  } catch (err) {
    return (err as { name?: string }).name;
  }
}

test("a node in a dual-stack subnet gets a primary IPv6 of the subnet's /64", async () => {
  const eniId = await primaryEni();
  const { addresses, prefixes } = await described(eniId);
  assert.equal(addresses.length, 1);
  assert.equal(addresses[0]?.primary, true);
  assert.ok(ipv6CidrContains(parseIpv6Cidr('2001:db8:5e00::/64'), parseIpv6(addresses[0]!.ip)));
  assert.deepEqual(prefixes, []);
});

test('Ipv6PrefixCount delegates aligned /80s inside the /64, never one another ENI holds', async () => {
  const a = await primaryEni();
  const b = await primaryEni();
  const outA = await t.ec2.send(
    new AssignIpv6AddressesCommand({ NetworkInterfaceId: a, Ipv6PrefixCount: 1 }),
  );
  const outB = await t.ec2.send(
    new AssignIpv6AddressesCommand({ NetworkInterfaceId: b, Ipv6PrefixCount: 2 }),
  );
  const all = [...(outA.AssignedIpv6Prefixes ?? []), ...(outB.AssignedIpv6Prefixes ?? [])];
  assert.equal(all.length, 3);
  assert.equal(new Set(all).size, 3);
  for (const p of all) {
    const c = parseIpv6Cidr(p);
    assert.equal(c.prefixLength, 80);
    assert.equal(`${p}`, p.toLowerCase());
    assert.ok(ipv6CidrContains(parseIpv6Cidr('2001:db8:5e00::/64'), c.base));
    // Not the /80 holding the router and the primary IPv6s.
    assert.notEqual((c.base >> 48n) & 0xffffn, 0n);
  }
  assert.deepEqual((await described(a)).prefixes, outA.AssignedIpv6Prefixes);
  assert.deepEqual(outA.AssignedIpv6Addresses ?? [], []);
});

test('Ipv6AddressCount assigns single addresses that describes lists after the primary', async () => {
  const eniId = await primaryEni();
  const out = await t.ec2.send(
    new AssignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6AddressCount: 2 }),
  );
  assert.equal(out.AssignedIpv6Addresses?.length, 2);
  const { addresses } = await described(eniId);
  assert.deepEqual(
    addresses.slice(1).map((a) => a.ip),
    out.AssignedIpv6Addresses,
  );
});

test('UnassignIpv6Addresses with Ipv6Prefix.N gives the /80 back for the next ENI', async () => {
  const eniId = await primaryEni(SUBNET_OTHER_AZ);
  const [prefix] = (
    await t.ec2.send(new AssignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6PrefixCount: 1 }))
  ).AssignedIpv6Prefixes!;
  const out = await t.ec2.send(
    new UnassignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6Prefixes: [prefix!] }),
  );
  assert.deepEqual(out.UnassignedIpv6Prefixes, [prefix]);
  assert.deepEqual((await described(eniId)).prefixes, []);
  const other = await primaryEni(SUBNET_OTHER_AZ);
  const again = await t.ec2.send(
    new AssignIpv6AddressesCommand({ NetworkInterfaceId: other, Ipv6PrefixCount: 1 }),
  );
  assert.deepEqual(again.AssignedIpv6Prefixes, [prefix]);
});

test('the cases users hit answer with EC2 error codes', async () => {
  const eniId = await primaryEni();
  assert.equal(
    await codeOf(
      t.ec2.send(
        new AssignIpv6AddressesCommand({ NetworkInterfaceId: 'eni-0000000000000dead', Ipv6PrefixCount: 1 }),
      ),
    ),
    'InvalidNetworkInterfaceID.NotFound',
  );
  const v4Only = await primaryEni(SUBNET_SMALL);
  assert.equal((await described(v4Only)).addresses.length, 0);
  assert.equal(
    await codeOf(
      t.ec2.send(new AssignIpv6AddressesCommand({ NetworkInterfaceId: v4Only, Ipv6PrefixCount: 1 })),
    ),
    'InvalidParameterValue',
  );
  assert.equal(
    await codeOf(
      t.ec2.send(
        new UnassignIpv6AddressesCommand({
          NetworkInterfaceId: eniId,
          Ipv6Prefixes: ['2001:db8:5e00:0:ff::/80'],
        }),
      ),
    ),
    'InvalidParameterValue',
  );
});

test("DescribeSubnets lists a dual-stack subnet's /64 as an associated IPv6 CIDR block", async () => {
  const out = await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [SUBNET_A, SUBNET_SMALL] }));
  const byId = new Map((out.Subnets ?? []).map((s) => [s.SubnetId, s.Ipv6CidrBlockAssociationSet ?? []]));
  assert.deepEqual(
    byId.get(SUBNET_A)?.map((a) => [a.Ipv6CidrBlock, a.Ipv6CidrBlockState?.State]),
    [['2001:db8:5e00::/64', 'associated']],
  );
  assert.deepEqual(byId.get(SUBNET_SMALL), []);
});

test('IMDS lists the ENI IPv6 addresses, its /80s and the subnet and VPC IPv6 CIDRs under its MAC', async () => {
  const node = await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A });
  imdsCaller = node.instanceId;
  const eniId = node.primaryEni.eniId;
  const out = await t.ec2.send(
    new AssignIpv6AddressesCommand({ NetworkInterfaceId: eniId, Ipv6PrefixCount: 1 }),
  );
  const token = await (
    await fetch(`${t.url}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
    })
  ).text();
  const base = `${t.url}/latest/meta-data/network/interfaces/macs/${node.primaryEni.mac}`;
  const read = async (path: string) => {
    const res = await fetch(`${base}/${path}`, { headers: { 'x-aws-ec2-metadata-token': token } });
    return res.status === 200 ? res.text() : `HTTP ${res.status}`;
  };
  assert.deepEqual(
    (await read('ipv6s')).split('\n'),
    (await described(eniId)).addresses.map((a) => a.ip),
  );
  assert.deepEqual((await read('ipv6-prefix')).split('\n'), out.AssignedIpv6Prefixes);
  assert.equal(await read('subnet-ipv6-cidr-blocks'), '2001:db8:5e00::/64');
  assert.equal(await read('vpc-ipv6-cidr-blocks'), '2001:db8:5e00::/56');
});

test("a subnet added to a dual-stack VPC gets the /56's next /64 by its index", async () => {
  const res = await fetch(`${t.url}/admin/subnets`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ subnetId: 'subnet-0v6extra', cidr: '10.0.64.0/24' }),
  });
  assert.equal(res.status, 201);
  assert.equal(((await res.json()) as { ipv6Cidr?: string }).ipv6Cidr, '2001:db8:5e00:3::/64');
  const out = await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: ['subnet-0v6extra'] }));
  assert.equal(out.Subnets?.[0]?.Ipv6CidrBlockAssociationSet?.[0]?.Ipv6CidrBlock, '2001:db8:5e00:3::/64');
});

test("DescribeVpcs lists a dual-stack VPC's /56 beside its IPv4 block", async () => {
  const out = await t.ec2.send(new DescribeVpcsCommand({ VpcIds: [TEST_VPC_DUAL_STACK.vpcId] }));
  const vpc = out.Vpcs?.[0];
  assert.equal(vpc?.CidrBlock, '10.0.0.0/16');
  assert.deepEqual(
    vpc?.Ipv6CidrBlockAssociationSet?.map((a) => [a.Ipv6CidrBlock, a.Ipv6CidrBlockState?.State]),
    [['2001:db8:5e00::/56', 'associated']],
  );
  assert.equal(
    await codeOf(t.ec2.send(new DescribeVpcsCommand({ VpcIds: ['vpc-0000000000000dead'] }))),
    'InvalidVpcID.NotFound',
  );
});
