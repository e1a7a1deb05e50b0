import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PassLoop, type PassLoopOptions } from './pass-loop.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean): Promise<void> {
  for (let waited = 0; !cond(); waited += 2) {
    if (waited > 3000) throw new Error('condition not reached');
    await sleep(2);
  }
}

function loop(run: () => Promise<boolean>, extra: Partial<PassLoopOptions> = {}) {
  const failures: number[] = [];
  const l = new PassLoop({
    run,
    intervalMs: 10_000,
    retryBaseMs: 40,
    maxBackoffMs: 80,
    onFailure: (_err, _failures, retryInMs) => failures.push(retryInMs),
    ...extra,
  });
  return { l, failures };
}

test('a pass that changed something is followed at once; an idle one waits for the interval', async () => {
  let runs = 0;
  const { l } = loop(async () => ++runs < 3);
  l.start();
  await until(() => runs === 3);
  await sleep(30);
  l.stop();
  assert.equal(runs, 3, 'no fourth pass before the interval');
});

test('failures back off exponentially up to the cap, and a nudge does not cut the backoff short', async () => {
  let runs = 0;
  const { l, failures } = loop(
    async () => {
      runs++;
      throw new Error('throttled');
    },
    { retryBaseMs: 100, maxBackoffMs: 200 },
  );
  l.start();
  await until(() => runs === 1);
  l.nudge();
  await sleep(30);
  assert.equal(runs, 1, 'still backing off');
  await until(() => failures.length >= 3);
  l.stop();
  assert.deepEqual(failures.slice(0, 3), [100, 200, 200]);
  assert.equal(l.failures, runs);
});

test('a nudge runs an idle loop at once, and a nudge during a pass runs another right after', async () => {
  let runs = 0;
  let release: () => void = () => {};
  const { l } = loop(async () => {
    runs++;
    if (runs === 2) await new Promise<void>((r) => (release = r));
    return false;
  });
  l.start();
  await until(() => runs === 1);
  l.nudge();
  await until(() => runs === 2); // long before the 10 s interval
  l.nudge(); // while pass 2 is in flight
  release();
  await until(() => runs === 3);
  l.stop();
});

test('a throwing observer does not stop the loop', async () => {
  let runs = 0;
  const { l } = loop(
    async () => {
      runs++;
      throw new Error('x');
    },
    {
      retryBaseMs: 1,
      maxBackoffMs: 1,
      onFailure: () => {
        throw new Error('logger broke');
      },
    },
  );
  l.start();
  await until(() => runs >= 3);
  l.stop();
});
