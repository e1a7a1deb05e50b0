import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DescribeNetworkInterfacesCommand } from '@aws-sdk/client-ec2';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';
import { QueryParams } from './params.ts';
import {
  bucketOf,
  EC2_THROTTLING,
  limitOf,
  mergeThrottling,
  RequestThrottling,
} from './request-throttling.ts';

const form = (o: Record<string, string>) => new QueryParams(new URLSearchParams(o).toString());

test("each action has its own bucket; EC2's listed actions their own size, the rest their category's", () => {
  const s = EC2_THROTTLING;
  assert.deepEqual(limitOf(s, 'AssignPrivateIpAddresses'), { capacity: 100, refillPerSecond: 5 });
  assert.deepEqual(limitOf(s, 'AttachNetworkInterface'), { capacity: 50, refillPerSecond: 5 });
  assert.deepEqual(limitOf(s, 'DescribeSubnets'), { capacity: 100, refillPerSecond: 20 });
  assert.deepEqual(limitOf(s, 'CreateTags'), { capacity: 100, refillPerSecond: 10 });
  assert.deepEqual(limitOf(mergeThrottling(s, { scale: 0.5 }), 'CreateNetworkInterface'), {
    capacity: 50,
    refillPerSecond: 2.5,
  });
});

test('DescribeNetworkInterfaces without a filter and without pagination draws from the smaller bucket', () => {
  assert.equal(bucketOf('DescribeNetworkInterfaces', form({})), 'DescribeNetworkInterfaces (unfiltered)');
  assert.equal(
    bucketOf('DescribeNetworkInterfaces', form({ 'NetworkInterfaceId.1': 'eni-1' })),
    'DescribeNetworkInterfaces (unfiltered)',
    'IDs are neither a filter nor pagination',
  );
  const filtered = form({ 'Filter.1.Name': 'attachment.instance-id', 'Filter.1.Value.1': 'i-1' });
  assert.equal(bucketOf('DescribeNetworkInterfaces', filtered), 'DescribeNetworkInterfaces');
  assert.equal(bucketOf('DescribeNetworkInterfaces', form({ MaxResults: '5' })), 'DescribeNetworkInterfaces');
  assert.equal(bucketOf('DescribeSubnets', form({})), 'DescribeSubnets', 'not one of the listed actions');
  assert.deepEqual(limitOf(EC2_THROTTLING, 'DescribeNetworkInterfaces (unfiltered)'), {
    capacity: 50,
    refillPerSecond: 10,
  });
});

test('a bucket refills at its rate up to its capacity; a refused request takes no token', () => {
  let now = 0;
  const t = new RequestThrottling(EC2_THROTTLING, () => now);
  for (let i = 0; i < 50; i++) t.admit('AttachNetworkInterface');
  assert.throws(() => t.admit('AttachNetworkInterface'), { code: 'RequestLimitExceeded', status: 503 });
  assert.throws(() => t.admit('AttachNetworkInterface'), { code: 'RequestLimitExceeded', status: 503 });
  now += 200; // 5/s: one token
  t.admit('AttachNetworkInterface');
  assert.throws(() => t.admit('AttachNetworkInterface'), { code: 'RequestLimitExceeded', status: 503 });
  t.admit('DetachNetworkInterface'); // another action, another bucket
  now += 3_600_000;
  assert.equal(t.state().AttachNetworkInterface?.tokens, 50, 'never above the capacity');
  t.set(mergeThrottling(EC2_THROTTLING, { scale: 0.5 }));
  assert.equal(t.state().AttachNetworkInterface?.tokens, 25, 'halved limits cut the tokens held');
});

test('malformed settings are refused naming the field', () => {
  assert.throws(() => mergeThrottling(EC2_THROTTLING, { scale: 0 }), /scale must be a number > 0/);
  assert.throws(
    () => mergeThrottling(EC2_THROTTLING, { mutating: { capacity: 0 } }),
    /mutating: capacity must be >= 1/,
  );
  assert.throws(() => mergeThrottling(EC2_THROTTLING, { scael: 1 }), /unknown throttling setting scael/);
});

describe("the emulator answers past EC2's buckets as EC2 does", () => {
  let t: TestEmulator;
  let now = 1_000_000;
  let eniId = '';
  before(async () => {
    t = await startTestEmulator({ nowMs: () => now });
    const r = await t.post({ Action: 'CreateNetworkInterface', SubnetId: SUBNET_A });
    eniId = /<networkInterfaceId>([^<]+)</.exec(r.body)?.[1] ?? '';
  });
  after(() => t.close());

  test('the 101st AssignPrivateIpAddresses in a second is answered 503 RequestLimitExceeded', async () => {
    const assign = () =>
      t.post({
        Action: 'AssignPrivateIpAddresses',
        NetworkInterfaceId: eniId,
        SecondaryPrivateIpAddressCount: '1',
      });
    for (let i = 0; i < 100; i++) assert.equal((await assign()).status, 200, `call ${i + 1}`);
    const refused = await assign();
    assert.equal(refused.status, 503);
    assert.match(
      refused.body,
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<Response><Errors><Error><Code>RequestLimitExceeded<\/Code><Message>Request limit exceeded\.<\/Message><\/Error><\/Errors><RequestID>[0-9a-f-]+<\/RequestID><\/Response>$/,
    );
    // The SDK reads it as EC2's throttling error.
    const other = await t.ec2.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: [eniId] }));
    assert.equal(
      other.NetworkInterfaces?.[0]?.PrivateIpAddresses?.length,
      101,
      'describes have their own bucket',
    );
    now += 1000;
    for (let i = 0; i < 5; i++) assert.equal((await assign()).status, 200, 'five tokens a second later');
    assert.equal((await assign()).status, 503);
    const seconds = t.emulator.ec2Rates(Math.floor((now - 1000) / 1000));
    const first = seconds.find((s) => s.second === Math.floor((now - 1000) / 1000));
    assert.equal(first?.byAction.AssignPrivateIpAddresses?.calls, 101);
    assert.equal(first?.throttled, 1);
    assert.equal(seconds.at(-1)?.throttled, 1);
  });

  test('PUT /admin/throttling halves the limits; GET shows the buckets', async () => {
    now += 3_600_000;
    const put = await fetch(`${t.url}/admin/throttling`, {
      method: 'PUT',
      body: JSON.stringify({ scale: 0.5 }),
    });
    assert.equal(put.status, 200);
    const got = (await (await fetch(`${t.url}/admin/throttling`)).json()) as {
      buckets: Record<string, { capacity: number; tokens: number }>;
    };
    assert.deepEqual(got.buckets.AssignPrivateIpAddresses, {
      capacity: 50,
      refillPerSecond: 2.5,
      tokens: 50,
    });
    const rates = (await (await fetch(`${t.url}/admin/ec2-rates`)).json()) as { seconds: unknown[] };
    assert.ok(rates.seconds.length >= 2);
    const bad = await fetch(`${t.url}/admin/throttling`, {
      method: 'PUT',
      body: JSON.stringify({ scale: -1 }),
    });
    assert.equal(bad.status, 400);
  });
});
