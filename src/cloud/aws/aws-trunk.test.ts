// The AWS driver's reads of a trunk against the emulator over HTTP: DescribeTrunkInterfaceAssociations
// filtered by the trunk and paged (MaxResults 255, as EC2 allows for this action), and the branch
// ENIs' facts by ID, an unknown ID left out rather than failing the call.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AssociateTrunkInterfaceCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance } from '../../emulator/api.ts';
import {
  SUBNET_A,
  SUBNET_SMALL,
  startTestEmulator,
  type TestEmulator,
} from '../../emulator/testing/test-emulator.ts';
import { ImdsClient } from '../imds.ts';
import { CannedEc2, ec2Reply } from '../testing/canned-ec2.ts';
import { awsCloudOn } from '../testing/emulator-cloud.ts';
import { AwsCloud } from './aws.ts';

let t: TestEmulator;
let node: LaunchedInstance;
let cloud: AwsCloud;

async function trunkOn(instanceId: string, deviceIndex: number): Promise<string> {
  const trunk = (
    await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: SUBNET_A, InterfaceType: 'trunk' }))
  ).NetworkInterface!.NetworkInterfaceId!;
  await t.ec2.send(
    new AttachNetworkInterfaceCommand({
      NetworkInterfaceId: trunk,
      InstanceId: instanceId,
      DeviceIndex: deviceIndex,
    }),
  );
  return trunk;
}

async function branchOn(trunk: string, vlanId: number, subnetId = SUBNET_A): Promise<string> {
  const branch = (
    await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: subnetId, Groups: ['sg-pod'] }))
  ).NetworkInterface!.NetworkInterfaceId!;
  await t.ec2.send(
    new AssociateTrunkInterfaceCommand({
      BranchInterfaceId: branch,
      TrunkInterfaceId: trunk,
      VlanId: vlanId,
    }),
  );
  return branch;
}

before(async () => {
  t = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
  node = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
  cloud = await awsCloudOn(t.url);
});
after(() => t.close());

test("describeTrunkAssociations lists this trunk's branch ENIs with their VLAN IDs, and no other trunk's", async () => {
  const trunk = await trunkOn(node.instanceId, 1);
  const other = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
  const otherTrunk = await trunkOn(other.instanceId, 1);
  const mine = new Map<string, number>();
  for (const vlan of [3, 4, 100]) mine.set(await branchOn(trunk, vlan), vlan);
  await branchOn(otherTrunk, 7);
  const listed = await cloud.describeTrunkAssociations(trunk);
  assert.deepEqual(new Map(listed.map((a) => [a.branchEniId, a.vlanId])), mine);
  assert.ok(listed.every((a) => a.trunkEniId === trunk && /^trunk-assoc-/.test(a.associationId)));
});

test('describeTrunkAssociations follows NextToken, asking for pages of 255 filtered by the trunk', async () => {
  const item = (n: number) =>
    `<item><associationId>trunk-assoc-${n}</associationId><branchInterfaceId>eni-b${n}</branchInterfaceId>` +
    `<trunkInterfaceId>eni-trunk</trunkInterfaceId><interfaceProtocol>VLAN</interfaceProtocol><vlanId>${n}</vlanId></item>`;
  const pages: Record<string, string> = {
    first: `<interfaceAssociationSet>${item(1)}</interfaceAssociationSet><nextToken>p2</nextToken>`,
    p2: `<interfaceAssociationSet>${item(2)}</interfaceAssociationSet>`,
  };
  const ec2 = new CannedEc2((action, params) =>
    ec2Reply(action, pages[typeof params.NextToken === 'string' ? params.NextToken : 'first'] ?? ''),
  );
  const canned = new AwsCloud({ ec2, imds: new ImdsClient({ endpoint: 'http://127.0.0.1:9' }) });
  const listed = await canned.describeTrunkAssociations('eni-trunk');
  assert.deepEqual(
    listed.map((a) => [a.branchEniId, a.vlanId]),
    [
      ['eni-b1', 1],
      ['eni-b2', 2],
    ],
  );
  assert.deepEqual(
    ec2.calls.map((c) => [c.params.NextToken, c.params.MaxResults]),
    [
      [undefined, 255],
      ['p2', 255],
    ],
  );
  assert.deepEqual(ec2.calls[0]?.params.Filter, [
    { Name: 'trunk-interface-association.trunk-interface-id', Value: ['eni-trunk'] },
  ]);
});

test('describeBranchEnis gives MAC, primary address and subnet CIDR, and leaves out an ENI EC2 does not know', async () => {
  const trunk = await trunkOn(node.instanceId, 2);
  const a = await branchOn(trunk, 300);
  const b = await branchOn(trunk, 301, SUBNET_SMALL);
  const facts = await cloud.describeBranchEnis([a, 'eni-0000000000000dead', b]);
  assert.deepEqual(facts.map((f) => f.eniId).sort(), [a, b].sort());
  const fb = facts.find((f) => f.eniId === b)!;
  assert.equal(fb.subnetCidr, '10.0.1.0/28');
  assert.match(fb.ip, /^10\.0\.1\.\d+$/);
  assert.match(fb.mac, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
});
