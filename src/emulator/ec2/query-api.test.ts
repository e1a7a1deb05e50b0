import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

test('a reply carries the 2016-11-15 namespace, requestId element and x-amzn-requestid header', async () => {
  const r = await t.post({ Action: 'DescribeSubnets' });
  assert.equal(r.status, 200);
  assert.match(r.requestId ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-/);
  assert.match(r.body, /<DescribeSubnetsResponse xmlns="http:\/\/ec2\.amazonaws\.com\/doc\/2016-11-15\/">/);
  assert.ok(r.body.includes(`<requestId>${r.requestId}</requestId>`));
  assert.match(r.body, /<subnetSet><item><subnetId>subnet-aaaaaaaaaaaaaaaaa<\/subnetId>/);
});

test('an unknown action is answered 400 InvalidAction in the EC2 error document', async () => {
  const r = await t.post({ Action: 'RunInstances' });
  assert.equal(r.status, 400);
  assert.match(
    r.body,
    /<Response><Errors><Error><Code>InvalidAction<\/Code><Message>[^<]+<\/Message><\/Error><\/Errors>/,
  );
  assert.ok(r.body.includes(`<RequestID>${r.requestId}</RequestID></Response>`));
});

test('a request without Action or a required parameter is answered MissingParameter', async () => {
  assert.match((await t.post({})).body, /<Code>MissingParameter<\/Code>/);
  const r = await t.post({ Action: 'CreateNetworkInterface' });
  assert.equal(r.status, 400);
  assert.match(r.body, /<Code>MissingParameter<\/Code><Message>[^<]*SubnetId/);
});

test('a malformed number is answered InvalidParameterValue', async () => {
  const r = await t.post({
    Action: 'AssignPrivateIpAddresses',
    NetworkInterfaceId: 'eni-1',
    SecondaryPrivateIpAddressCount: 'two',
  });
  assert.equal(r.status, 400);
  assert.match(r.body, /<Code>InvalidParameterValue<\/Code>/);
});

test('message text is XML-escaped', async () => {
  const r = await t.post({ Action: 'DescribeNetworkInterfaces', 'NetworkInterfaceId.1': 'eni-<&>' });
  assert.match(r.body, /<Code>InvalidNetworkInterfaceID.NotFound<\/Code><Message>[^<]*eni-&#60;&#38;&#62;/);
});

test('each call logs one structured line with action, status, ms and requestId', async () => {
  const before = t.logs.length;
  const ok = await t.post({ Action: 'DescribeInstances' });
  const bad = await t.post({ Action: 'DeleteNetworkInterface', NetworkInterfaceId: 'eni-00000000000000000' });
  const lines = t.logs.slice(before);
  assert.equal(lines.length, 2);
  assert.deepEqual(
    lines.map((l) => [l.action, l.status, l.requestId, l.code]),
    [
      ['DescribeInstances', 200, ok.requestId, undefined],
      ['DeleteNetworkInterface', 400, bad.requestId, 'InvalidNetworkInterfaceID.NotFound'],
    ],
  );
  assert.equal(typeof lines[0]?.ms, 'number');
  assert.equal(lines[1]?.networkInterfaceId, 'eni-00000000000000000');
});

test('list parameters PrivateIpAddress.N are read in order', async () => {
  const inst = await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A });
  const r = await t.post({
    Action: 'AssignPrivateIpAddresses',
    NetworkInterfaceId: inst.primaryEni.eniId,
    'PrivateIpAddress.1': '10.0.0.201',
    'PrivateIpAddress.2': '10.0.0.200',
  });
  assert.equal(r.status, 200, r.body);
  assert.match(
    r.body,
    /<assignedPrivateIpAddressesSet><item><privateIpAddress>10\.0\.0\.201<\/privateIpAddress><\/item><item><privateIpAddress>10\.0\.0\.200<\/privateIpAddress>/,
  );
});
