import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../emulator/vpc/ids.ts';
import type { Logger } from '../infra/log.ts';
import { CloudError } from './cloud.ts';
import { backoffMs, DEFAULT_RETRY_POLICY } from './ec2-retry.ts';
import { type Ec2RateLimit, LimitedCloud } from './limited-cloud.ts';
import { ScriptedCloud } from './testing/scripted-cloud.ts';
import { VirtualClock } from './testing/virtual-clock.ts';

const throttled = () =>
  new CloudError('cannot do it: RequestLimitExceeded: slow down', 'RequestLimitExceeded', true);
const internal = () => new CloudError('cannot do it: InternalError: oops', 'InternalError', true);
const notFound = () =>
  new CloudError(
    'cannot do it: InvalidNetworkInterfaceID.NotFound: no such ENI',
    'InvalidNetworkInterfaceID.NotFound',
    false,
  );

interface Rig {
  readonly inner: ScriptedCloud;
  readonly clock: VirtualClock;
  readonly cloud: LimitedCloud;
  readonly warnings: { msg: string; fields: Record<string, unknown> | undefined }[];
}

function rig(limit: Partial<Ec2RateLimit> = {}, seed = 7, maxTotalMs?: number): Rig {
  const inner = new ScriptedCloud();
  const clock = new VirtualClock();
  const warnings: Rig['warnings'] = [];
  const log: Logger = {
    debug() {},
    info() {},
    warn: (msg, fields) => warnings.push({ msg, fields }),
    error() {},
  };
  let tokens = 0;
  const cloud = new LimitedCloud({
    inner,
    limit: { qps: 1000, burst: 1000, maxAttempts: 5, ...limit },
    log,
    clock,
    random: seededRandom(seed),
    newClientToken: () => `token-${++tokens}`,
    ...(maxTotalMs === undefined ? {} : { retry: { maxTotalMs } }),
  });
  return { inner, clock, cloud, warnings };
}

test('EC2 calls past the burst are spaced by the rate over N calls, IMDS is not limited', async () => {
  const { inner, clock, cloud } = rig({ qps: 2, burst: 4 });
  const start = clock.now();
  const done: number[] = [];
  await clock.run(
    (async () => {
      for (let i = 0; i < 24; i++) {
        await cloud.describeInstanceEnis('i-0test');
        done.push(clock.now() - start);
      }
    })(),
  );
  assert.deepEqual(done.slice(0, 4), [0, 0, 0, 0], 'the burst goes at once');
  assert.equal(done.at(-1), 20 * 500, '20 calls beyond the burst at 2 per second');
  const before = clock.now();
  for (let i = 0; i < 50; i++) await cloud.metadata();
  assert.equal(clock.now(), before, 'IMDS reads waited for nothing');
  assert.equal(inner.callsOf('metadata').length, 50);
  const f = cloud.figures();
  assert.equal(f.byAction.DescribeNetworkInterfaces?.calls, 24);
  assert.equal(f.tokenWaitMs, 20 * 500, 'each call past the burst waited half a second');
});

test('calls made at once share the burst, then wait in turn', async () => {
  const { clock, cloud } = rig({ qps: 1, burst: 2 });
  const start = clock.now();
  const finished: number[] = [];
  await clock.run(
    Promise.all(
      Array.from({ length: 5 }, () =>
        cloud.assignPrivateIps('eni-0a', 1).then(() => finished.push(clock.now() - start)),
      ),
    ),
  );
  assert.deepEqual(finished, [0, 0, 1000, 2000, 3000]);
});

test('backoff grows exponentially with full jitter: within [0, base·2^(n-1)), capped, same for a seed', () => {
  const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1_600 };
  const draws = (seed: number) => {
    const random = seededRandom(seed);
    return Array.from({ length: 8 }, (_, i) => backoffMs(policy, i + 1, random));
  };
  const delays = draws(3);
  delays.forEach((d, i) => {
    const ceiling = Math.min(1_600, 100 * 2 ** i);
    assert.ok(d >= 0 && d < ceiling, `retry ${i + 1}: ${d} within [0, ${ceiling})`);
  });
  assert.deepEqual(draws(3), delays, 'the same seed, the same delays');
  assert.notDeepEqual(draws(4), delays, 'jittered: another seed, other delays');
  // Over many draws the mean of retry n approaches half its ceiling: the ceiling really grows.
  const random = seededRandom(9);
  const mean = (n: number) =>
    Array.from({ length: 2000 }, () => backoffMs(policy, n, random)).reduce((a, b) => a + b, 0) / 2000;
  assert.ok(Math.abs(mean(1) - 50) < 5 && Math.abs(mean(3) - 200) < 20 && Math.abs(mean(8) - 800) < 80);
});

test("a throttled call is retried when its lane's jittered pause ends; each throttle halves the lane", async () => {
  const { inner, clock, cloud, warnings } = rig({ qps: 1, burst: 3 });
  inner.failures.push(throttled(), throttled());
  const ips = await clock.run(cloud.assignPrivateIps('eni-0a', 2));
  assert.deepEqual(ips, ['10.0.0.100', '10.0.0.101']);
  assert.equal(inner.callsOf('assignPrivateIps').length, 3);
  const f = cloud.figures();
  assert.deepEqual(f.byAction.AssignPrivateIpAddresses, {
    calls: 1,
    attempts: 3,
    throttled: 2,
    errors: 0,
    retries: 2,
    failures: 0,
  });
  assert.equal(f.throttledInARow, 0, 'the last answer was not throttled');
  // Halved to 0.5/s: the lane waits 1 to 2 of its intervals (2-4 s); halved again: 4-8 s.
  const [first, second] = clock.sleeps;
  assert.ok(first !== undefined && first >= 2000 && first < 4000, `first pause ${first}`);
  assert.ok(second !== undefined && second >= 4000 && second < 8000, `second pause ${second}`);
  const lane = f.lanes?.AssignPrivateIpAddresses;
  assert.equal(lane?.cuts, 2);
  assert.ok(
    lane !== undefined && lane.rate > 0.25 && lane.rate < 0.3,
    `0.25/s and one step back up: ${lane?.rate}`,
  );
  assert.equal(f.lanes?.DescribeNetworkInterfaces, undefined, 'other actions keep their own rate');
  assert.equal(warnings.length, 1, 'throttled twice in one call: one warning');
  assert.match(warnings[0]?.msg ?? '', /throttles this agent repeatedly/);
  assert.equal(warnings[0]?.fields?.action, 'AssignPrivateIpAddresses');
});

test('5xx answers are retried like throttling, and counted as errors', async () => {
  const { inner, clock, cloud } = rig();
  inner.failures.push(internal());
  await clock.run(cloud.detachEni('eni-attach-0a'));
  assert.equal(inner.callsOf('detachEni').length, 2);
  assert.equal(cloud.figures().byAction.DetachNetworkInterface?.errors, 1);
});

test('a non-retryable error passes at once: no retry, no backoff, the same error', async () => {
  const { inner, clock, cloud } = rig();
  const err = notFound();
  inner.failures.push(err);
  await assert.rejects(clock.run(cloud.deleteEni('eni-0gone')), (e) => e === err);
  assert.equal(inner.callsOf('deleteEni').length, 1);
  assert.deepEqual(clock.sleeps, []);
  assert.deepEqual(cloud.figures().byAction.DeleteNetworkInterface, {
    calls: 1,
    attempts: 1,
    throttled: 0,
    errors: 0,
    retries: 0,
    failures: 1,
  });
});

test('a call throttled on every attempt keeps its turn past maxAttempts until the time bound, then fails saying so, still retryable', async () => {
  const { inner, clock, cloud } = rig({ maxAttempts: 3 }, 7, 5_000);
  for (let i = 0; i < 40; i++) inner.failures.push(throttled());
  const start = clock.now();
  const err = await clock.run(cloud.attachEni('eni-0a', 'i-0test', 1)).catch((e: unknown) => e);
  assert.ok(err instanceof CloudError);
  assert.equal(err.code, 'RequestLimitExceeded');
  assert.equal(err.retryable, true);
  const attempts = inner.callsOf('attachEni').length;
  assert.ok(attempts > 3, `${attempts} attempts: throttling is not a failure that uses up attempts`);
  assert.ok(attempts < 40, `${attempts} attempts: the lane halved its rate at each throttle`);
  assert.ok(clock.now() - start <= 5_000, 'no attempt past the time bound');
  assert.match(
    err.message,
    new RegExp(
      `^cannot do it: RequestLimitExceeded: slow down \\(after ${attempts} attempts in \\d+\\.\\d s\\)$`,
    ),
  );
  const f = cloud.figures();
  assert.equal(f.throttledInARow, attempts);
  assert.equal(f.failures, 1);
  assert.equal(f.retries, attempts - 1);
});

test('other retryable failures use up maxAttempts, throttled attempts between them do not', async () => {
  const { inner, clock, cloud } = rig({ maxAttempts: 2 });
  inner.failures.push(internal(), throttled(), throttled(), internal(), internal());
  const err = await clock.run(cloud.attachEni('eni-0a', 'i-0test', 1)).catch((e: unknown) => e);
  assert.ok(err instanceof CloudError);
  assert.equal(err.code, 'InternalError');
  assert.equal(inner.callsOf('attachEni').length, 4, 'two failures, two throttles between them');
});

test('while EC2 throttles the agent, releases are refused unsent; after a minute without, they go', async () => {
  const { inner, clock, cloud } = rig({ maxAttempts: 1 });
  inner.failures.push(throttled());
  await clock.run(cloud.assignPrivateIps('eni-0a', 1)); // throttled once, then its turn came
  for (const release of [
    () => cloud.unassignPrivateIps('eni-0a', ['10.0.0.5']),
    () => cloud.detachEni('eni-attach-0a'),
    () => cloud.deleteEni('eni-0a'),
  ]) {
    const err = await clock.run(release()).catch((e: unknown) => e);
    assert.ok(err instanceof CloudError && err.code === 'Ec2ReleaseHeld', String(err));
    assert.equal(err.retryable, false, 'not sent: nothing to find out later');
    assert.match(err.message, /not sent: EC2 throttled this agent [\d.]+ s ago/);
  }
  assert.equal(inner.callsOf('unassignPrivateIps').length + inner.callsOf('detachEni').length, 0);
  assert.match(cloud.figures().releasesHeld ?? '', /releases wait/);
  await clock.run(cloud.describeInstanceEnis('i-0test')); // other calls go
  clock.pass(60_000);
  assert.equal(cloud.releasesHeld(), undefined);
  await clock.run(cloud.unassignPrivateIps('eni-0a', ['10.0.0.5']));
  assert.equal(inner.callsOf('unassignPrivateIps').length, 1);
});

test('no retry starts past the total-time bound, even with attempts left', async () => {
  // One token per 10 s: the second attempt waits 10 s for its token, past the 5 s bound.
  const { inner, clock, cloud } = rig({ qps: 0.1, burst: 1, maxAttempts: 10 }, 7, 5_000);
  inner.failures.push(internal(), internal(), internal());
  const err = await clock.run(cloud.attachEni('eni-0a', 'i-0test', 1)).catch((e: unknown) => e);
  assert.ok(err instanceof CloudError);
  assert.equal(inner.callsOf('attachEni').length, 2);
  assert.match(err.message, /after 2 attempts/);
});

test('one ClientToken per createEni call, the same on each of its retries, another for the next call', async () => {
  const { inner, clock, cloud } = rig();
  inner.failures.push(internal(), throttled());
  await clock.run(cloud.createEni('subnet-0a', ['sg-0a'], 'vpcnet ENI', { owner: 'i-0test' }));
  await clock.run(cloud.createEni('subnet-0a', ['sg-0a'], 'vpcnet ENI'));
  const tokens = inner.callsOf('createEni').map((c) => c.args[4]);
  assert.deepEqual(tokens, ['token-1', 'token-1', 'token-1', 'token-2']);
  assert.deepEqual(inner.callsOf('createEni')[0]?.args.slice(0, 4), [
    'subnet-0a',
    ['sg-0a'],
    'vpcnet ENI',
    { owner: 'i-0test' },
  ]);
});

test("a caller's own ClientToken is passed through unchanged", async () => {
  const { inner, clock, cloud } = rig();
  await clock.run(cloud.createEni('subnet-0a', [], 'd', undefined, 'mine'));
  assert.equal(inner.callsOf('createEni')[0]?.args[4], 'mine');
});

test('a maxAttempts below 1 is refused', () => {
  assert.throws(() => rig({ maxAttempts: 0 }), /max attempts must be a positive integer/);
});
