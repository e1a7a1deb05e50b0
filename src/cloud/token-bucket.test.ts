import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VirtualClock } from './testing/virtual-clock.ts';
import { TokenBucket } from './token-bucket.ts';

test('a full bucket lets `burst` calls go at once, then one per 1/rate seconds', async () => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket({ ratePerSecond: 2, burst: 3 }, clock);
  const start = clock.now();
  const takenAt: number[] = [];
  await clock.run(
    (async () => {
      for (let i = 0; i < 7; i++) {
        await bucket.take();
        takenAt.push(clock.now() - start);
      }
    })(),
  );
  assert.deepEqual(takenAt, [0, 0, 0, 500, 1000, 1500, 2000]);
});

test('over many calls the rate is respected: N calls past the burst take (N - burst) / rate seconds', async () => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket({ ratePerSecond: 0.05, burst: 10 }, clock);
  const start = clock.now();
  await clock.run(
    (async () => {
      for (let i = 0; i < 110; i++) await bucket.take();
    })(),
  );
  // 100 calls beyond the burst at one per 20 s.
  assert.equal(clock.now() - start, 100 * 20_000);
});

test('concurrent callers are served in the order they asked, each a refill interval apart', async () => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket({ ratePerSecond: 10, burst: 1 }, clock);
  const start = clock.now();
  const order: [number, number][] = [];
  await clock.run(
    Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const waited = await bucket.take();
        order.push([i, clock.now() - start]);
        return waited;
      }),
    ),
  );
  assert.deepEqual(order, [
    [0, 0],
    [1, 100],
    [2, 200],
    [3, 300],
  ]);
});

test('a quiet period refills the bucket, never beyond the burst', () => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket({ ratePerSecond: 1, burst: 5 }, clock);
  for (let i = 0; i < 5; i++) assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.available(), 0);
  clock.pass(2_000);
  assert.equal(bucket.available(), 2);
  clock.pass(60_000);
  assert.equal(bucket.available(), 5);
  for (let i = 0; i < 5; i++) assert.equal(bucket.reserve(), 0);
  assert.equal(bucket.reserve(), 1_000);
});

test('take() reports how long it waited for its token', async () => {
  const clock = new VirtualClock();
  const bucket = new TokenBucket({ ratePerSecond: 4, burst: 1 }, clock);
  assert.equal(await clock.run(bucket.take()), 0);
  assert.equal(await clock.run(bucket.take()), 250);
});

test('a rate that is not positive or a burst below 1 is refused', () => {
  const clock = new VirtualClock();
  assert.throws(() => new TokenBucket({ ratePerSecond: 0, burst: 1 }, clock), /rate must be a positive/);
  assert.throws(() => new TokenBucket({ ratePerSecond: 1, burst: 0 }, clock), /burst must be a positive/);
});
