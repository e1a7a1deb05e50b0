// The AWS driver's prefix-delegation calls against the emulator over HTTP: our own Query client's
// Ipv4PrefixCount / Ipv4Prefix.N requests and its reading of assignedIpv4PrefixSet / ipv4PrefixSet.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LaunchedInstance } from '../../emulator/api.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { CloudError } from '../cloud.ts';
import { awsCloudOn } from '../testing/emulator-cloud.ts';
import type { AwsCloud } from './aws.ts';

let t: TestEmulator;
let node: LaunchedInstance;
let cloud: AwsCloud;

before(async () => {
  t = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
  node = await t.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A });
  cloud = await awsCloudOn(t.url);
});
after(() => t.close());

async function prefixesOnPrimary(): Promise<readonly string[]> {
  const enis = await cloud.describeInstanceEnis(node.instanceId);
  return enis.find((e) => e.deviceNumber === 0)?.ipv4Prefixes ?? [];
}

test('assignIpv4Prefixes returns the delegated /28s and describes list them on the ENI', async () => {
  const eniId = node.primaryEni.eniId;
  const prefixes = await cloud.assignIpv4Prefixes(eniId, 2);
  assert.equal(prefixes.length, 2);
  for (const p of prefixes) assert.match(p, /^10\.0\.0\.\d+\/28$/);
  assert.deepEqual(await prefixesOnPrimary(), prefixes);
  await cloud.unassignIpv4Prefixes(eniId, [prefixes[0]!]);
  assert.deepEqual(await prefixesOnPrimary(), [prefixes[1]]);
  await cloud.unassignIpv4Prefixes(eniId, [prefixes[1]!]);
  assert.deepEqual(await prefixesOnPrimary(), []);
});

test('a fragmented subnet surfaces as CloudError InsufficientCidrBlocks, not retryable', async () => {
  const url = `${t.url}/admin/subnets/${SUBNET_A}/fragmentation`;
  assert.equal((await fetch(url, { method: 'POST' })).status, 200);
  try {
    await assert.rejects(cloud.assignIpv4Prefixes(node.primaryEni.eniId, 1), (e: unknown) => {
      assert.ok(e instanceof CloudError);
      assert.equal(e.code, 'InsufficientCidrBlocks');
      assert.equal(e.retryable, false);
      return true;
    });
  } finally {
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 200);
  }
});
