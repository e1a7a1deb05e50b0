import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Figure, formatGoalsTable, goalMet } from './goals-table.ts';

test('a ratio goal is judged on vpcnet / reference, an absolute goal on the value', () => {
  assert.equal(goalMet({ name: 'a', unit: 'ms', value: 6, reference: 10, goal: { ratioAtMost: 0.6 } }), true);
  assert.equal(
    goalMet({ name: 'a', unit: 'ms', value: 6.1, reference: 10, goal: { ratioAtMost: 0.6 } }),
    false,
  );
  assert.equal(goalMet({ name: 'b', unit: 'MiB', value: 81, goal: { atMost: 80 } }), false);
  assert.equal(goalMet({ name: 'b', unit: 'MiB', value: 80, goal: { atMost: 80 } }), true);
});

test('a figure that could not be read, or has no goal, is not judged', () => {
  assert.equal(goalMet({ name: 'c', unit: 'ms', value: undefined, goal: { atMost: 20 } }), undefined);
  assert.equal(
    goalMet({ name: 'd', unit: 'ms', value: 5, reference: 0, goal: { ratioAtMost: 1 } }),
    undefined,
  );
  assert.equal(goalMet({ name: 'e', unit: 'ms', value: 5, reference: 4 }), undefined);
});

test('the table prints one aligned row per figure with its ratio, goal and verdict, and counts the goals met', () => {
  const figures: Figure[] = [
    { name: 'ADD p50', unit: 'ms', value: 18, reference: 8, goal: { ratioAtMost: 0.6 } },
    { name: 'agent RSS', unit: 'MiB', value: 70, goal: { atMost: 80 } },
    { name: 'p99', unit: 'ms', value: undefined, goal: { atMost: 20 } },
  ];
  const lines = formatGoalsTable(figures).split('\n');
  assert.equal(lines.length, 2 + figures.length + 1);
  assert.match(lines[2]!, /^ADD p50\s+ms\s+18\.0\s+8\.0\s+2\.25x\s+<= 0\.6x ref\s+NO$/);
  assert.match(lines[3]!, /^agent RSS\s+MiB\s+70\.0\s+<= 80 MiB\s+yes$/);
  assert.match(lines[4]!, /^p99\s+ms\s+n\/a\s+<= 20 ms\s+n\/a$/);
  assert.equal(lines[5], 'goals met: 1 of 2');
  // Aligned: the header's last column ends where every row's does.
  const width = lines[0]!.length;
  for (const l of lines.slice(1, 5)) assert.equal(l.length, width);
});
