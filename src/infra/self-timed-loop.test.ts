import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SelfTimedLoop } from './self-timed-loop.ts';

test('each run sets the wait before the next; stop waits for the run under way and ends the loop', async () => {
  const starts: number[] = [];
  let release: () => void = () => {};
  const loop = new SelfTimedLoop(async () => {
    starts.push(performance.now());
    if (starts.length === 3) await new Promise<void>((r) => (release = r));
    return starts.length === 1 ? 40 : 1;
  });
  loop.start();
  await sleep(80);
  assert.equal(starts.length, 3, 'the first run asked for 40 ms, the second for 1');
  assert.ok(starts[1]! - starts[0]! >= 35);
  let stopped = false;
  const stopping = loop.stop().then(() => (stopped = true));
  await sleep(10);
  assert.equal(stopped, false, 'the third run is still under way');
  release();
  await stopping;
  await sleep(20);
  assert.equal(starts.length, 3, 'no run after stop');
});

test('a nudge runs the task now, or right after the run under way', async () => {
  let runs = 0;
  let release: () => void = () => {};
  const loop = new SelfTimedLoop(async () => {
    runs++;
    if (runs === 2) await new Promise<void>((r) => (release = r));
    return 60_000;
  });
  loop.start();
  await sleep(10);
  assert.equal(runs, 1);
  loop.nudge();
  await sleep(10);
  assert.equal(runs, 2, 'now, not in a minute');
  loop.nudge();
  loop.nudge();
  await sleep(10);
  assert.equal(runs, 2, 'not two at once');
  release();
  await sleep(10);
  assert.equal(runs, 3, 'once more right after, however many nudges came');
  await loop.stop();
});
