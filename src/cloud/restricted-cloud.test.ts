// The clouds a locked-down VPC allows, against the in-process emulator, which counts every EC2 call
// it answers: IMDS-only reads the instance's ENIs, their addresses and prefixes from instance
// metadata exactly as EC2 describes them, with no EC2 call; read-only describes EC2 and refuses
// every change before anything is sent.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LaunchedInstance } from '../emulator/api.ts';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import type { AwsCloud } from './aws/aws.ts';
import { type Cloud, CloudError, type EniInfo } from './cloud.ts';
import { ImdsOnlyCloud, REFUSED_BY_SETTING, ReadOnlyCloud } from './restricted-cloud.ts';
import { awsCloudOn } from './testing/emulator-cloud.ts';

describe('clouds of a locked-down VPC, against the emulator', () => {
  let emu: TestEmulator;
  let node: LaunchedInstance;
  let aws: AwsCloud;

  const ec2Calls = async (): Promise<number> => {
    const state = (await (await fetch(`${emu.url}/admin/state`)).json()) as {
      ec2Calls: Record<string, { calls: number }>;
    };
    return Object.values(state.ec2Calls).reduce((n, c) => n + c.calls, 0);
  };
  const refusedBy = (setting: RegExp) => (err: unknown) =>
    err instanceof CloudError && err.code === REFUSED_BY_SETTING && setting.test(err.message);
  /** What IMDS and EC2 both tell of an ENI (EC2 alone knows the attachment ID, tags and type). */
  const shared = (e: EniInfo) => ({
    eniId: e.eniId,
    mac: e.mac,
    deviceNumber: e.deviceNumber,
    subnetId: e.subnetId,
    subnetCidr: e.subnetCidr,
    primaryIp: e.primaryIp,
    secondaryIps: e.secondaryIps,
    ipv4Prefixes: e.ipv4Prefixes,
  });

  before(async () => {
    emu = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
    node = await emu.emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: 'subnet-aaaaaaaaaaaaaaaaa',
    });
    const res = await fetch(`${emu.url}/admin/instances/${node.instanceId}/enis`, {
      method: 'POST',
      body: JSON.stringify({ secondaryIpCount: 3, ipv4PrefixCount: 1 }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    aws = await awsCloudOn(emu.url);
  });
  after(async () => {
    aws.close();
    await emu.close();
  });

  test('IMDS-only: the ENIs, addresses and prefixes read from IMDS are EC2s, and no EC2 call is made', async () => {
    const cloud: Cloud = new ImdsOnlyCloud(aws, aws.imds);
    const before = await ec2Calls();
    const meta = await cloud.metadata();
    const fromImds = await cloud.describeInstanceEnis(meta.instanceId);
    const limits = await cloud.instanceTypeLimits(meta.instanceType);
    assert.deepEqual(await cloud.vpcCidrs(meta.primaryMac), ['10.0.0.0/16']);
    assert.equal(await ec2Calls(), before, 'not one EC2 call');

    assert.deepEqual(
      fromImds.map((e) => [e.deviceNumber, e.secondaryIps.length, e.ipv4Prefixes?.length ?? 0, e.tags]),
      [
        [0, 0, 0, {}],
        [1, 3, 1, {}],
      ],
    );
    assert.deepEqual(limits, { maxEnis: 2, ipsPerEni: 5 }, 'what is attached stands in for the type');
    const fromEc2 = await aws.describeInstanceEnis(node.instanceId);
    assert.deepEqual(fromImds.map(shared), fromEc2.map(shared));
  });

  test('IMDS-only: every other call is refused naming ENABLE_IMDS_ONLY_MODE, and nothing reaches EC2', async () => {
    const cloud: Cloud = new ImdsOnlyCloud(aws, aws.imds);
    const before = await ec2Calls();
    const imdsOnly = refusedBy(
      /^ENABLE_IMDS_ONLY_MODE=true: vpcnet makes no EC2 call \(DescribeSubnets not sent\)$/,
    );
    await assert.rejects(cloud.describeSubnets({ availabilityZone: 'us-west-2a', vpcId: 'vpc-1' }), imdsOnly);
    await assert.rejects(cloud.describeBranchEnis(['eni-1']), refusedBy(/ENABLE_IMDS_ONLY_MODE/));
    await assert.rejects(cloud.describeTrunkAssociations('eni-1'), refusedBy(/ENABLE_IMDS_ONLY_MODE/));
    await assert.rejects(cloud.describeDetachedEnis('k', 'v'), refusedBy(/ENABLE_IMDS_ONLY_MODE/));
    await assert.rejects(cloud.assignPrivateIps('eni-1', 2), refusedBy(/ENABLE_IMDS_ONLY_MODE/));
    await assert.rejects(
      cloud.createEni('subnet-aaaaaaaaaaaaaaaaa', ['sg-1'], 'x'),
      refusedBy(/ENABLE_IMDS_ONLY_MODE/),
    );
    assert.equal(await ec2Calls(), before);
  });

  test('read-only: EC2 is described, and every change is refused before it is sent', async () => {
    const cloud: Cloud = new ReadOnlyCloud(aws);
    assert.equal((await cloud.describeInstanceEnis(node.instanceId)).length, 2);
    const before = await ec2Calls();
    const readOnly = refusedBy(
      /^DISABLE_NETWORK_RESOURCE_PROVISIONING=true: vpcnet changes no ENI or address \(AssignPrivateIpAddresses not sent\)$/,
    );
    await assert.rejects(cloud.assignPrivateIps('eni-1', 2), readOnly);
    await assert.rejects(cloud.assignIpv4Prefixes('eni-1', 1), refusedBy(/AssignPrivateIpAddresses/));
    await assert.rejects(cloud.assignIpv6Prefixes('eni-1', 1), refusedBy(/AssignIpv6Addresses/));
    await assert.rejects(
      cloud.createEni('subnet-aaaaaaaaaaaaaaaaa', ['sg-1'], 'x'),
      refusedBy(/CreateNetworkInterface/),
    );
    await assert.rejects(cloud.attachEni('eni-1', node.instanceId, 3), refusedBy(/AttachNetworkInterface/));
    await assert.rejects(cloud.detachEni('eni-attach-1'), refusedBy(/DetachNetworkInterface/));
    await assert.rejects(cloud.deleteEni('eni-1'), refusedBy(/DeleteNetworkInterface/));
    await assert.rejects(
      cloud.unassignPrivateIps('eni-1', ['10.0.0.9']),
      refusedBy(/UnassignPrivateIpAddresses/),
    );
    await assert.rejects(
      cloud.setDeleteOnTermination('eni-1', 'eni-attach-1'),
      refusedBy(/ModifyNetworkInterfaceAttribute/),
    );
    assert.equal(await ec2Calls(), before);
  });
});
