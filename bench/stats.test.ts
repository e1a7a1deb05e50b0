import assert from 'node:assert/strict';
import { test } from 'node:test';
import { percentile } from './stats.ts';

test('percentile is the nearest rank: p50 of 1..10 is 5, p95 is 10', () => {
  const xs = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1];
  assert.equal(percentile(xs, 50), 5);
  assert.equal(percentile(xs, 95), 10);
});

test('p99 of 100 samples or fewer is their maximum, of 200 the second largest', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(hundred, 99), 99);
  assert.equal(percentile(hundred.slice(0, 50), 99), 50);
  const twoHundred = Array.from({ length: 200 }, (_, i) => i + 1);
  assert.equal(percentile(twoHundred, 99), 198);
});

test('percentile of no samples is 0 and leaves its input unsorted', () => {
  assert.equal(percentile([], 50), 0);
  const xs = [3, 1, 2];
  percentile(xs, 50);
  assert.deepEqual(xs, [3, 1, 2]);
});
