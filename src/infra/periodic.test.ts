// The loop on node:test's mocked timers: every pass's start is read from the mocked Date, so the
// tests state exact schedules instead of sleeping and hoping.

import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { PeriodicLoop, type PeriodicLoopOptions } from './periodic.ts';
import { virtualTime } from './testing/virtual-time.ts';

beforeEach(() => virtualTime.enable());
afterEach(() => virtualTime.reset());

/** A loop whose passes record their (virtual) start time; `run` decides each pass's outcome. */
function loop(run: (pass: number) => Promise<boolean>, extra: Partial<PeriodicLoopOptions> = {}) {
  const starts: number[] = [];
  const retries: number[] = [];
  const l = new PeriodicLoop({
    run: () => {
      starts.push(Date.now());
      return run(starts.length);
    },
    intervalMs: 10_000,
    retryBaseMs: 40,
    maxBackoffMs: 80,
    onFailure: (_err, _failures, retryInMs) => retries.push(retryInMs),
    ...extra,
  });
  return { l, starts, retries };
}

test('a pass that changed something is followed at once; an idle one waits exactly the interval', async () => {
  const { l, starts } = loop(async (pass) => pass < 3, { intervalMs: 1000 });
  l.start();
  await virtualTime.advance(999);
  assert.deepEqual(starts, [0, 0, 0], 'passes 2 and 3 follow at once; the idle third waits');
  await virtualTime.advance(1);
  assert.deepEqual(starts, [0, 0, 0, 1000]);
  void l.stop();
});

test('immediate follow-ups are bounded: a pass that always changes something still yields to the interval', async () => {
  const { l, starts } = loop(async () => true, { intervalMs: 1000 });
  l.start();
  await virtualTime.advance(999);
  assert.deepEqual(starts, Array(21).fill(0), 'the first pass and 20 immediate follow-ups');
  await virtualTime.advance(1);
  assert.deepEqual(starts, [...Array(21).fill(0), ...Array(21).fill(1000)]);
  void l.stop();
});

test('failures back off exponentially up to the cap, and a nudge does not cut the backoff short', async () => {
  const { l, starts, retries } = loop(
    async () => {
      throw new Error('throttled');
    },
    { retryBaseMs: 100, maxBackoffMs: 200 },
  );
  l.start();
  await virtualTime.advance(1);
  l.nudge();
  await virtualTime.advance(600);
  void l.stop();
  assert.deepEqual(starts, [0, 100, 300, 500]);
  assert.deepEqual(retries, [100, 200, 200, 200]);
  assert.equal(l.failures, 4);
});

test('a success after failures resets the backoff', async () => {
  const { l, starts } = loop(
    async (pass) => {
      if (pass <= 2) throw new Error('throttled');
      return false;
    },
    { retryBaseMs: 100, maxBackoffMs: 400, intervalMs: 1000 },
  );
  l.start();
  await virtualTime.advance(1300);
  void l.stop();
  assert.deepEqual(starts, [0, 100, 300, 1300]);
  assert.equal(l.failures, 0);
});

test('a nudge runs an idle loop at once, and a nudge during a pass runs another right after it', async () => {
  let release: () => void = () => {};
  const { l, starts } = loop(async (pass) => {
    if (pass === 2) await new Promise<void>((r) => (release = r));
    return false;
  });
  l.start();
  await virtualTime.advance(10);
  l.nudge();
  await virtualTime.advance(10);
  assert.deepEqual(starts, [0, 10], 'long before the 10 s interval');
  l.nudge(); // while pass 2 is in flight
  await virtualTime.advance(5);
  release();
  await virtualTime.advance(1);
  assert.deepEqual(starts, [0, 10, 25], 'right after pass 2 ended at 25, not at the interval');
  void l.stop();
});

test('afterPass can ask for an earlier wake-up than the interval', async () => {
  const { l, starts } = loop(async () => false, { afterPass: () => 250 });
  l.start();
  await virtualTime.advance(500);
  void l.stop();
  assert.deepEqual(starts, [0, 250, 500]);
});

test('a throwing observer does not stop the loop', async () => {
  const { l, starts } = loop(
    async () => {
      throw new Error('x');
    },
    {
      retryBaseMs: 1,
      maxBackoffMs: 1,
      onFailure: () => {
        throw new Error('logger broke');
      },
      afterPass: () => {
        throw new Error('observer broke');
      },
    },
  );
  l.start();
  await virtualTime.advance(3);
  void l.stop();
  assert.deepEqual(starts, [0, 1, 2, 3]);
});

test('no pass starts after stop', async () => {
  const { l, starts } = loop(async () => false, { intervalMs: 10 });
  l.start();
  await virtualTime.advance(10);
  void l.stop();
  l.nudge();
  await virtualTime.advance(100);
  assert.deepEqual(starts, [0, 10]);
});

test('the first pass can wait for its interval, and stop() waits for a pass in flight', async () => {
  let release: () => void = () => {};
  let finished = false;
  const { l, starts } = loop(
    async () => {
      await new Promise<void>((r) => (release = r));
      finished = true;
      return false;
    },
    { intervalMs: 1000, firstAfterMs: 1000 },
  );
  l.start();
  await virtualTime.advance(999);
  assert.deepEqual(starts, []);
  await virtualTime.advance(1);
  assert.deepEqual(starts, [1000]);
  const stopped = l.stop();
  let resolved = false;
  void stopped.then(() => (resolved = true));
  await virtualTime.advance(1);
  assert.equal(resolved, false, 'stop waits for the pass');
  release();
  await stopped;
  assert.ok(finished);
});
