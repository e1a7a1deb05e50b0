import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceTime } from './agent-figures.ts';
import { serviceFigures, serviceLines, serviceMedians } from './figures.ts';

function burst(p50Ms: number, p99Ms: number | undefined): ServiceTime {
  return {
    inFlight: 50,
    samples: 50,
    p50Ms,
    p95Ms: p50Ms * 2,
    p99Ms,
    burstAddWallMs: 80,
    runtimeP50Ms: 40,
    arrival: { p50Ms: 40, spreadMs: 80 },
    phases: 'kernel 1.0/2.0',
    agentCpu: { processMs: 60, mainThreadMs: 50 },
  };
}

test('the service goals take the median burst’s p50 and p99, each on its own', () => {
  const bursts = [burst(2.5, 30), burst(9, 12), burst(3, 15)];
  assert.deepEqual(serviceMedians(bursts), { p50Ms: 3, p99Ms: 15 });
  const figures = serviceFigures(bursts);
  assert.deepEqual(
    figures.map((f) => [f.name, f.value, f.note]),
    [
      ['agent ADD service p50', 3, '50 in flight, median of 3 bursts'],
      ['agent ADD service p99', 15, '50 in flight, median of 3 bursts'],
    ],
  );
});

test('one burst is named as such', () => {
  assert.equal(serviceFigures([burst(2, 10)])[0]?.note, '50 in flight, one burst');
});

test('a burst without a p99 leaves the median p99 unread', () => {
  assert.equal(serviceMedians([burst(2, 10), burst(3, undefined), burst(4, 12)]).p99Ms, undefined);
});

test('the section prints every burst and the medians', () => {
  const lines = serviceLines([burst(2.5, 30), burst(9, 12), burst(3, 15)]);
  assert.match(lines[0] ?? '', /50 ADDs in flight .* 3 bursts of 50 samples/);
  assert.equal(lines.filter((l) => /^ {2}burst \d: p50/.test(l)).length, 3);
  assert.equal(lines.at(-1), '  median over the bursts: p50 3.00 ms, p99 15.00 ms');
  assert.deepEqual(serviceLines([]), []);
});
