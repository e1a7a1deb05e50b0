import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchOutputs, parseBatchFailures, splitJsonValues } from './ip-batch.ts';

test('batch failures are attributed to their line with the message ip printed before it', () => {
  const stderr = [
    'RTNETLINK answers: No such file or directory',
    'Command failed -:3',
    'Cannot find device "vpcnope"',
    'Command failed -:5',
    '',
  ].join('\n');
  assert.deepEqual(parseBatchFailures(stderr), [
    { line: 3, message: 'RTNETLINK answers: No such file or directory' },
    { line: 5, message: 'Cannot find device "vpcnope"' },
  ]);
  assert.deepEqual(parseBatchFailures('nsenter: cannot open /x: No such file or directory\n'), []);
});

test('concatenated JSON documents are split, strings with brackets included', () => {
  assert.deepEqual(splitJsonValues('[{"a":"]["}]\n[]\n[{"b":"\\"["}]\n'), [[{ a: '][' }], [], [{ b: '"[' }]]);
});

test('batch outputs skip the lines that failed, so later outputs stay on their own line', () => {
  const out = batchOutputs('[1]\n[3]\n', 'Device "eth7" does not exist.\nCommand failed -:2\n', [1, 2, 3]);
  assert.deepEqual(
    [...out],
    [
      [1, [1]],
      [3, [3]],
    ],
  );
});
