import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  age,
  colourWanted,
  EXIT_DEGRADED,
  EXIT_DOWN,
  EXIT_HEALTHY,
  EXIT_USAGE,
  exitCodeOf,
  printer,
  table,
  visibleWidth,
  worse,
} from './output.ts';

test('table aligns every column on its widest cell, headers in upper case, no trailing blanks', () => {
  const text = table(
    ['pod', 'address', 'eni'],
    [
      ['default/web-0', '10.0.0.11', 'eni-primary'],
      ['kube-system/coredns-abc', '10.0.0.12', 'eni-0b'],
    ],
  );
  const lines = text.trimEnd().split('\n');
  assert.equal(lines[0], 'POD                      ADDRESS    ENI');
  assert.equal(lines[1], 'default/web-0            10.0.0.11  eni-primary');
  assert.equal(lines[2], 'kube-system/coredns-abc  10.0.0.12  eni-0b');
  for (const l of lines) assert.equal(l, l.trimEnd());
  // The third column starts at the same offset on every line.
  assert.deepEqual(new Set(lines.map((l) => l.search(/(ENI|eni-)/))).size, 1);
});

test('colour codes take no width: a coloured cell aligns as a plain one', () => {
  const p = printer(true);
  const text = table(
    ['state', 'x'],
    [
      [p.tone('bad', 'missing'), '1'],
      ['present', '2'],
    ],
  );
  const [, first, second] = text.trimEnd().split('\n');
  assert.equal(visibleWidth(first ?? ''), visibleWidth(second ?? ''));
  assert.ok((first ?? '').includes('\u001b[31mmissing\u001b[0m'));
});

test('an empty table prints its headers only', () => {
  assert.equal(table(['pod', 'if'], []), 'POD  IF\n');
});

test('colour only when stdout is a terminal, NO_COLOR is unset and the output is not JSON', () => {
  assert.equal(colourWanted(true, {}, false), true);
  assert.equal(colourWanted(false, {}, false), false, 'not a terminal');
  assert.equal(colourWanted(true, { NO_COLOR: '1' }, false), false, 'NO_COLOR set');
  assert.equal(
    colourWanted(true, { NO_COLOR: '' }, false),
    true,
    'NO_COLOR empty counts as unset (no-color.org)',
  );
  assert.equal(colourWanted(true, {}, true), false, '--json');
});

test('a printer without colour leaves text as it is', () => {
  assert.equal(printer(false).tone('bad', 'missing'), 'missing');
  assert.notEqual(printer(true).tone('bad', 'missing'), 'missing');
});

test('exit codes: 0 healthy, 1 degraded, 3 down, and 2 stays the usage error', () => {
  assert.equal(exitCodeOf('healthy'), EXIT_HEALTHY);
  assert.equal(exitCodeOf('degraded'), EXIT_DEGRADED);
  assert.equal(exitCodeOf('down'), EXIT_DOWN);
  assert.deepEqual([EXIT_HEALTHY, EXIT_DEGRADED, EXIT_USAGE, EXIT_DOWN], [0, 1, 2, 3]);
  assert.equal(worse('healthy', 'degraded'), 'degraded');
  assert.equal(worse('down', 'degraded'), 'down');
});

test('age reads as seconds, minutes, hours and days', () => {
  const now = 1_000_000_000;
  assert.equal(age(now - 5_000, now), '5s');
  assert.equal(age(now - 3 * 60_000, now), '3m');
  assert.equal(age(now - 125 * 60_000, now), '2h5m');
  assert.equal(age(now - 3 * 86_400_000, now), '3d');
  assert.equal(age(now + 5_000, now), '0s', 'a clock step back reads as now');
});
