import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../cloud/cloud.ts';
import { untilNotThrottled } from './throttled-start.ts';

function deps() {
  const pauses: number[] = [];
  const warnings: string[] = [];
  return {
    pauses,
    warnings,
    d: {
      log: {
        warn: (msg: string, f?: Record<string, unknown>) => warnings.push(`${msg} ${JSON.stringify(f)}`),
      },
      sleep: async (ms: number) => pauses.push(ms),
      random: () => 0.5,
    },
  };
}

const throttled = () =>
  new CloudError('Request limit exceeded. (after 7 attempts in 48.4 s)', 'RequestLimitExceeded', true);

test('a start-up step EC2 throttles is tried again, after a pause, until it answers', async () => {
  const { pauses, warnings, d } = deps();
  let calls = 0;
  const out = await untilNotThrottled(
    "describe the node's ENIs",
    async () => {
      if (++calls <= 3) throw throttled();
      return 'described';
    },
    d,
  );
  assert.equal(out, 'described');
  assert.deepEqual(pauses, [1500, 1500, 1500]);
  assert.equal(warnings.length, 3);
  assert.match(warnings[2]!, /tries again instead of exiting.*"step":"describe the node's ENIs","tries":3/);
});

test('a throttle found among the causes counts; any other failure ends the start at once', async () => {
  const { d } = deps();
  let calls = 0;
  const wrapped = await untilNotThrottled(
    'x',
    async () => {
      if (++calls === 1) throw new Error('cannot rebuild the pool', { cause: throttled() });
      return calls;
    },
    d,
  );
  assert.equal(wrapped, 2);
  // Not authorized (a refusal), and EC2's own failure after the call's retries: both end the start.
  for (const failure of [
    new CloudError('not authorized', 'UnauthorizedOperation', false),
    new CloudError('internal', 'InternalError', true),
  ]) {
    await assert.rejects(
      untilNotThrottled(
        'x',
        async () => {
          throw failure;
        },
        d,
      ),
      (err) => err === failure,
      failure.code,
    );
  }
});
