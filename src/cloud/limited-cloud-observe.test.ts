// LimitedCloud tells its observer of every request to EC2 as it is answered: the action, the time
// the request took, and for an error its code and whether EC2 throttled.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../infra/log.ts';
import { CloudError } from './cloud.ts';
import { type Ec2Attempt, LimitedCloud } from './limited-cloud.ts';
import { ScriptedCloud } from './testing/scripted-cloud.ts';
import { VirtualClock } from './testing/virtual-clock.ts';

test('every attempt is observed as answered: errors with their code and whether EC2 throttled, then the success', async () => {
  const inner = new ScriptedCloud();
  const clock = new VirtualClock();
  const seen: Ec2Attempt[] = [];
  const cloud = new LimitedCloud({
    inner,
    limit: { qps: 1000, burst: 1000, maxAttempts: 5 },
    log: silentLogger,
    clock,
    random: () => 0.5,
    observe: (a) => seen.push(a),
    releaseHoldMs: 0, // the delete below is about observation, not about the hold
  });
  inner.failures.push(
    new CloudError('cannot assign: RequestLimitExceeded: slow down', 'RequestLimitExceeded', true),
    new CloudError('cannot assign: InternalError: oops', 'InternalError', true),
  );
  const ips = await clock.run(cloud.assignPrivateIps('eni-1', 2));
  assert.equal(ips.length, 2);
  assert.deepEqual(
    seen.map((a) => [a.action, a.error?.code, a.error?.throttled]),
    [
      ['AssignPrivateIpAddresses', 'RequestLimitExceeded', true],
      ['AssignPrivateIpAddresses', 'InternalError', false],
      ['AssignPrivateIpAddresses', undefined, undefined],
    ],
  );
  assert.match(seen[0]?.error?.message ?? '', /slow down/);
  assert.ok(
    seen.every((a) => a.ms === 0),
    'the time of the request only: backoff and token waits excluded',
  );

  seen.length = 0;
  inner.failures.push(new CloudError('no such ENI', 'InvalidNetworkInterfaceID.NotFound', false));
  await assert.rejects(clock.run(cloud.deleteEni('eni-9')), /no such ENI/);
  assert.deepEqual(
    seen.map((a) => [a.action, a.error?.code]),
    [['DeleteNetworkInterface', 'InvalidNetworkInterfaceID.NotFound']],
    'a call that is not retried is observed once',
  );
  await cloud.metadata();
  assert.equal(seen.length, 1, 'IMDS is not EC2: not observed');
});

test('a LimitedCloud without an observer behaves as before', async () => {
  const inner = new ScriptedCloud();
  const cloud = new LimitedCloud({
    inner,
    limit: { qps: 1000, burst: 1000, maxAttempts: 1 },
    log: silentLogger,
  });
  assert.deepEqual(await cloud.describeInstanceEnis('i-1'), []);
  assert.equal(cloud.figures().calls, 1);
});
