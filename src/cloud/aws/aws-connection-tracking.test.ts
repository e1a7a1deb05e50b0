// Connection-tracking timeouts on the wire, against the in-process emulator: CreateNetworkInterface
// sends ConnectionTrackingSpecification.* (only the timeouts given), the emulator keeps them and
// DescribeNetworkInterfaces returns them as connectionTrackingConfiguration, which the driver reads
// into EniInfo; a primary ENI launched with them shows them too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LaunchedInstance } from '../../emulator/api.ts';
import { startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { CloudError } from '../cloud.ts';
import { awsCloudOn } from '../testing/emulator-cloud.ts';
import type { AwsCloud } from './aws.ts';

describe('connection tracking timeouts through the AWS driver and the emulator', () => {
  let emu: TestEmulator;
  let node: LaunchedInstance;
  let cloud: AwsCloud;

  before(async () => {
    emu = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
    node = await emu.emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: 'subnet-aaaaaaaaaaaaaaaaa',
      connectionTracking: { tcpEstablishedTimeout: 3600, udpTimeout: 45 },
    });
    cloud = await awsCloudOn(emu.url);
  });
  after(async () => {
    cloud.close();
    await emu.close();
  });

  test("the primary ENI's timeouts, set at launch, are read from DescribeNetworkInterfaces", async () => {
    const [primary] = await cloud.describeInstanceEnis(node.instanceId);
    assert.equal(primary?.deviceNumber, 0);
    assert.deepEqual(primary?.connectionTracking, { tcpEstablishedTimeout: 3600, udpTimeout: 45 });
  });

  test('an ENI created with timeouts keeps them, and they come back on the ENI attached with them', async () => {
    const created = await cloud.createEni('subnet-aaaaaaaaaaaaaaaaa', ['sg-1'], 'ct', {}, undefined, {
      tcpEstablishedTimeout: 600,
      udpStreamTimeout: 120,
      udpTimeout: 30,
    });
    await cloud.attachEni(created.eniId, node.instanceId, 1);
    const eni = (await cloud.describeInstanceEnis(node.instanceId)).find((e) => e.eniId === created.eniId);
    assert.deepEqual(eni?.connectionTracking, {
      tcpEstablishedTimeout: 600,
      udpStreamTimeout: 120,
      udpTimeout: 30,
    });
  });

  test('an ENI created without timeouts has none: no element in the describe, none in EniInfo', async () => {
    const created = await cloud.createEni('subnet-aaaaaaaaaaaaaaaaa', ['sg-1'], 'plain');
    await cloud.attachEni(created.eniId, node.instanceId, 2);
    const eni = (await cloud.describeInstanceEnis(node.instanceId)).find((e) => e.eniId === created.eniId);
    assert.ok(eni !== undefined);
    assert.equal('connectionTracking' in eni, false);
    const raw = await emu.post({
      Action: 'DescribeNetworkInterfaces',
      'NetworkInterfaceId.1': created.eniId,
    });
    assert.doesNotMatch(raw.body, /connectionTrackingConfiguration/);
  });

  test('the wire names are ConnectionTrackingSpecification.* in, connectionTrackingConfiguration out', async () => {
    const raw = await emu.post({
      Action: 'CreateNetworkInterface',
      SubnetId: 'subnet-aaaaaaaaaaaaaaaaa',
      'ConnectionTrackingSpecification.UdpStreamTimeout': '90',
    });
    assert.equal(raw.status, 200, raw.body);
    assert.match(
      raw.body,
      /<connectionTrackingConfiguration><udpStreamTimeout>90<\/udpStreamTimeout><\/connectionTrackingConfiguration>/,
    );
  });

  test("a timeout outside EC2's bounds is refused with InvalidParameterValue, and nothing is created", async () => {
    const before = (await emu.post({ Action: 'DescribeNetworkInterfaces' })).body.split('<item>').length;
    await assert.rejects(
      cloud.createEni('subnet-aaaaaaaaaaaaaaaaa', ['sg-1'], 'bad', {}, undefined, { udpTimeout: 61 }),
      (err: unknown) => err instanceof CloudError && err.code === 'InvalidParameterValue',
    );
    const afterwards = (await emu.post({ Action: 'DescribeNetworkInterfaces' })).body.split('<item>').length;
    assert.equal(afterwards, before);
  });
});
