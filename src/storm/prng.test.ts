import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededPrng } from './prng.ts';

function draw(seed: number, n: number): number[] {
  const r = seededPrng(seed);
  return Array.from({ length: n }, () => r.next());
}

test('one seed gives one sequence, another seed a different one', () => {
  assert.deepEqual(draw(42, 20), draw(42, 20));
  assert.notDeepEqual(draw(42, 20), draw(43, 20));
});

test('draws stay in their ranges', () => {
  const r = seededPrng(7);
  for (let i = 0; i < 2000; i++) {
    const f = r.next();
    assert.ok(f >= 0 && f < 1);
    const k = r.int(3, 5);
    assert.ok(k >= 3 && k <= 5 && Number.isInteger(k));
  }
  assert.throws(() => r.pick([]), /empty/);
});
