import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logLineStep, progressLine, progressTo } from './progress.ts';

test('a progress line names the operation, the seconds since it began and the step', () => {
  assert.equal(
    progressLine('vpcnet image:', 12_345, 'podman build'),
    'vpcnet image: [  12.3 s] podman build\n',
  );
});

test('progress counts seconds from when it was made, one line per step', () => {
  let now = 1_000;
  const out: string[] = [];
  const progress = progressTo(
    (t) => out.push(t),
    'lab up:',
    () => now,
  );
  progress('network created');
  now += 2_500;
  progress('emulator ready');
  assert.deepEqual(out, ['lab up: [   0.0 s] network created\n', 'lab up: [   2.5 s] emulator ready\n']);
});

test('a lab log line becomes its message with its fields, without its timestamp', () => {
  assert.equal(
    logLineStep({ time: '2026-11-30T00:00:00Z', msg: 'instance launched', node: 'node1', nodes: ['a'] }),
    'instance launched (node=node1 nodes=["a"])',
  );
  assert.equal(logLineStep({ msg: 'lab ready' }), 'lab ready');
});
