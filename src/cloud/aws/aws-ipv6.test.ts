// The AWS driver's IPv6 calls against the emulator over HTTP: our own Query client's
// AssignIpv6Addresses / UnassignIpv6Addresses requests, its reading of assignedIpv6PrefixSet,
// ipv6PrefixSet and ipv6AddressesSet, and the IPv6 facts it reads from IMDS.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LaunchedInstance } from '../../emulator/api.ts';
import {
  SUBNET_A,
  SUBNET_SMALL,
  startTestEmulator,
  TEST_VPC_DUAL_STACK,
  type TestEmulator,
} from '../../emulator/testing/test-emulator.ts';
import { CloudError } from '../cloud.ts';
import { CannedEc2, ec2Reply } from '../testing/canned-ec2.ts';
import { awsCloudOn } from '../testing/emulator-cloud.ts';
import type { AwsCloud } from './aws.ts';
import { assignIpv6Prefixes, unassignIpv6Prefixes } from './aws-ipv6.ts';

let t: TestEmulator;
let node: LaunchedInstance;
let v4Node: LaunchedInstance;
let imdsFor: () => LaunchedInstance | undefined = () => node;
let cloud: AwsCloud;

before(async () => {
  t = await startTestEmulator({
    vpc: TEST_VPC_DUAL_STACK,
    imdsFallbackInstance: () => imdsFor()?.instanceId,
  });
  node = await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A });
  v4Node = await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_SMALL });
  cloud = await awsCloudOn(t.url);
});
after(() => t.close());

async function primaryEni(of: LaunchedInstance) {
  const enis = await cloud.describeInstanceEnis(of.instanceId);
  return enis.find((e) => e.deviceNumber === 0);
}

test('assignIpv6Prefixes returns one canonical /80 that describes list on the ENI, and unassign removes it', async () => {
  const eniId = node.primaryEni.eniId;
  const [prefix, ...more] = await cloud.assignIpv6Prefixes(eniId, 1);
  assert.deepEqual(more, []);
  assert.match(prefix ?? '', /^2001:db8:5e00:0:[0-9a-f]+::\/80$/);
  assert.deepEqual((await primaryEni(node))?.ipv6Prefixes, [prefix]);
  await cloud.unassignIpv6Prefixes(eniId, [prefix!]);
  assert.equal((await primaryEni(node))?.ipv6Prefixes, undefined);
});

test("describes carry the node's primary IPv6; an IPv4-only ENI has no IPv6 fields", async () => {
  const eni = await primaryEni(node);
  assert.equal(eni?.ipv6Addresses?.length, 1);
  const v4 = await primaryEni(v4Node);
  assert.equal(v4?.ipv6Addresses, undefined);
  assert.equal(v4?.ipv6Prefixes, undefined);
});

test('metadata reads the primary IPv6 and the IPv6 CIDRs; an IPv4-only node has none', async () => {
  imdsFor = () => node;
  const meta = await cloud.metadata();
  assert.equal(meta.primaryIpv6, (await primaryEni(node))?.ipv6Addresses?.[0]);
  assert.deepEqual(meta.subnetIpv6Cidrs, ['2001:db8:5e00::/64']);
  assert.deepEqual(meta.vpcIpv6Cidrs, ['2001:db8:5e00::/56']);
  imdsFor = () => v4Node;
  const v4 = await cloud.metadata();
  assert.equal(v4.primaryIpv6, undefined);
  assert.equal(v4.subnetIpv6Cidrs, undefined);
  assert.deepEqual(v4.vpcIpv6Cidrs, ['2001:db8:5e00::/56']);
  imdsFor = () => node;
});

test('a subnet without an IPv6 CIDR surfaces as CloudError InvalidParameterValue, not retryable', async () => {
  await assert.rejects(cloud.assignIpv6Prefixes(v4Node.primaryEni.eniId, 1), (e: unknown) => {
    assert.ok(e instanceof CloudError);
    assert.equal(e.code, 'InvalidParameterValue');
    assert.equal(e.retryable, false);
    assert.match(e.message, /assign 1 IPv6 prefixes to ENI eni-/);
    return true;
  });
});

test('canned replies: an upper-case /80 is returned in canonical text, a /64 is an InvalidResponse', async () => {
  const reply = (prefix: string) =>
    new CannedEc2((action) =>
      ec2Reply(
        action,
        `<networkInterfaceId>eni-1</networkInterfaceId><assignedIpv6Addresses/><assignedIpv6PrefixSet><item>${prefix}</item></assignedIpv6PrefixSet>`,
      ),
    );
  const ok = reply('2001:DB8:5E00:0:0007:0:0:0/80');
  assert.deepEqual(await assignIpv6Prefixes(ok, 'eni-1', 1), ['2001:db8:5e00:0:7::/80']);
  assert.deepEqual(ok.calls[0], {
    action: 'AssignIpv6Addresses',
    params: { NetworkInterfaceId: 'eni-1', Ipv6PrefixCount: 1 },
  });
  await assert.rejects(assignIpv6Prefixes(reply('2001:db8:5e00::/64'), 'eni-1', 1), (e: unknown) => {
    assert.ok(e instanceof CloudError);
    assert.equal(e.code, 'InvalidResponse');
    return true;
  });
});

test('canned replies: unassign sends Ipv6Prefix.N and an empty list makes no call', async () => {
  const ec2 = new CannedEc2((action) => ec2Reply(action, '<networkInterfaceId>eni-1</networkInterfaceId>'));
  await unassignIpv6Prefixes(ec2, 'eni-1', []);
  assert.equal(ec2.calls.length, 0);
  await unassignIpv6Prefixes(ec2, 'eni-1', ['2001:db8:5e00:0:7::/80']);
  assert.deepEqual(ec2.calls[0], {
    action: 'UnassignIpv6Addresses',
    params: { NetworkInterfaceId: 'eni-1', Ipv6Prefix: ['2001:db8:5e00:0:7::/80'] },
  });
});
