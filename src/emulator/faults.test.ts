import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DescribeSubnetsCommand } from '@aws-sdk/client-ec2';
import { FaultInjector, staleWindowMs } from './faults.ts';
import { SUBNET_A, startTestEmulator } from './testing/test-emulator.ts';
import { seededRandom } from './vpc/ids.ts';

function outcomes(seed: number, n: number): string[] {
  const f = new FaultInjector(seededRandom(seed));
  f.set({ throttleRate: 0.3, errorRate: 0.2 });
  return Array.from({ length: n }, () => f.decide('AssignPrivateIpAddresses').error?.code ?? 'ok');
}

test('the same seed injects the same faults in the same order', () => {
  const a = outcomes(11, 200);
  assert.deepEqual(outcomes(11, 200), a);
  assert.notDeepEqual(outcomes(12, 200), a);
});

test('fault rates are honoured over many calls', () => {
  const got = outcomes(5, 4000);
  const share = (code: string) => got.filter((c) => c === code).length / got.length;
  assert.ok(
    Math.abs(share('RequestLimitExceeded') - 0.3) < 0.04,
    `throttled ${share('RequestLimitExceeded')}`,
  );
  // errors only where not throttled: 0.7 * 0.2
  assert.ok(Math.abs(share('InternalError') - 0.14) < 0.04, `errors ${share('InternalError')}`);
});

test('faults apply only to the listed actions, and to IMDS only when imds is set', () => {
  const f = new FaultInjector(seededRandom(1));
  f.set({ throttleRate: 1, actions: ['AssignPrivateIpAddresses'] });
  assert.equal(f.decide('AssignPrivateIpAddresses').error?.code, 'RequestLimitExceeded');
  assert.equal(f.decide('AssignPrivateIpAddresses').error?.status, 503);
  assert.equal(f.decide('DescribeNetworkInterfaces').error, undefined);
  assert.equal(f.decide(undefined).error, undefined);
  f.set({ errorRate: 1, imds: true });
  assert.equal(f.decide(undefined).error?.code, 'InternalError');
  assert.equal(f.decide('DescribeSubnets').error?.status, 500);
});

test('a lost reply: the call runs, its answer is a 500 InternalError; only the matching action', async () => {
  const t = await startTestEmulator();
  try {
    t.emulator.setFaults({ replyLostRate: 1, actions: ['CreateNetworkInterface'] });
    const lost = await t.post({ Action: 'CreateNetworkInterface', SubnetId: SUBNET_A });
    assert.equal(lost.status, 500);
    assert.match(lost.body, /<Code>InternalError<\/Code>/);
    const listed = await t.post({ Action: 'DescribeNetworkInterfaces' });
    assert.equal(listed.status, 200, 'other actions answer');
    assert.match(listed.body, /<networkInterfaceId>eni-/, 'the ENI was created although its reply was lost');
  } finally {
    await t.close();
  }
});

test('rates outside [0,1] are refused', () => {
  const f = new FaultInjector(seededRandom(1));
  assert.throws(() => f.set({ throttleRate: 1.5 }));
  assert.throws(() => f.set({ latencyMs: -1 }));
  assert.throws(() => f.set({ replyLostRate: 2 }));
});

test('over the wire: throttling is 503 RequestLimitExceeded, errors 500 InternalError, latency is added', async () => {
  const t = await startTestEmulator();
  try {
    t.emulator.setFaults({ throttleRate: 1 });
    await assert.rejects(t.ec2.send(new DescribeSubnetsCommand({})), (e: unknown) => {
      const err = e as { name: string; $metadata: { httpStatusCode: number } };
      return err.name === 'RequestLimitExceeded' && err.$metadata.httpStatusCode === 503;
    });
    t.emulator.setFaults({ errorRate: 1 });
    const r = await t.post({ Action: 'DescribeSubnets' });
    assert.equal(r.status, 500);
    assert.match(r.body, /<Code>InternalError<\/Code>/);
    t.emulator.setFaults({ latencyMs: 120 });
    const started = performance.now();
    await t.ec2.send(new DescribeSubnetsCommand({}));
    assert.ok(performance.now() - started >= 110);
    t.emulator.setFaults({ throttleRate: 1, imds: true });
    const token = await fetch(`${t.url}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
    });
    assert.equal(token.status, 429);
    t.emulator.setFaults({});
    assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 200);
  } finally {
    await t.close();
  }
});

test('IMDS lag is its own fault: imdsStaleReadMs delays IMDS only, without IMDS errors', () => {
  const f = new FaultInjector(seededRandom(1));
  f.set({ imdsStaleReadMs: 400, throttleRate: 1 });
  assert.deepEqual(f.decide(undefined), { latencyMs: 0, staleReadMs: 400, error: undefined });
  assert.equal(f.decide('DescribeNetworkInterfaces').staleReadMs, 0, 'EC2 reads see the truth');
  f.set({ staleReadMs: 300 });
  assert.equal(f.decide(undefined).staleReadMs, 0, 'EC2 lag alone leaves IMDS current');
  assert.equal(f.decide('DescribeNetworkInterfaces').staleReadMs, 300);
  f.set({ staleReadMs: 300, imds: true });
  assert.equal(f.decide(undefined).staleReadMs, 300, 'the joint fault of before still works');
  f.set({ staleReadMs: 300, imds: true, imdsStaleReadMs: 0 });
  assert.equal(f.decide(undefined).staleReadMs, 0, 'imdsStaleReadMs overrides it for IMDS');
  assert.throws(() => f.set({ imdsStaleReadMs: -1 }), /imdsStaleReadMs must be >= 0/);
});

test('the stale-read history keeps the longer of the two lags', () => {
  assert.equal(staleWindowMs({}), 0);
  assert.equal(staleWindowMs({ staleReadMs: 300, imdsStaleReadMs: 800 }), 800);
  assert.equal(staleWindowMs({ staleReadMs: 300 }), 300);
});
