import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecentErrors } from './recent-errors.ts';

const req = (command: string, pod: string, args = `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod}`) => ({
  env: { CNI_COMMAND: command, CNI_CONTAINERID: `c-${pod}`, CNI_IFNAME: 'eth0', CNI_ARGS: args },
  stdin: '{}',
});
const failed = (code: number, msg: string, details?: string) => ({
  exitCode: 1,
  stdout: `${JSON.stringify({ cniVersion: '1.0.0', code, msg, ...(details ? { details } : {}) })}\n`,
});

test('a failed answer is recorded with its pod, container, command, CNI code and message; a success is not', () => {
  const ring = new RecentErrors(() => Date.parse('2026-11-30T10:00:00Z'));
  ring.observe(req('ADD', 'web-0'), { exitCode: 0, stdout: '{}' });
  ring.observe(req('ADD', 'web-1'), failed(11, 'no free address', 'pool empty'));
  assert.deepEqual(ring.list(), [
    {
      time: '2026-11-30T10:00:00.000Z',
      command: 'ADD',
      namespace: 'default',
      pod: 'web-1',
      containerId: 'c-web-1',
      ifName: 'eth0',
      code: 11,
      message: 'no free address: pool empty',
    },
  ]);
});

test('the ring keeps the newest N, newest first', () => {
  const ring = new RecentErrors(Date.now, 3);
  for (const p of ['a', 'b', 'c', 'd', 'e']) ring.observe(req('DEL', p), failed(7, `bad ${p}`));
  assert.deepEqual(
    ring.list().map((e) => e.pod),
    ['e', 'd', 'c'],
  );
});

test('a request refused for bad CNI_ARGS is still recorded, without a pod', () => {
  const ring = new RecentErrors(Date.now);
  ring.observe(req('ADD', 'x', 'garbage-without-equals'), failed(4, 'CNI_ARGS: invalid pair'));
  assert.equal(ring.list()[0]?.pod, undefined);
  assert.equal(ring.list()[0]?.code, 4);
});

test('watching wraps a handler: its answers pass through and its failures land in the ring', async () => {
  const ring = new RecentErrors(Date.now);
  const handler = ring.watching(async () => failed(11, 'try again'));
  const res = await handler(req('ADD', 'web-2'));
  assert.equal(res.exitCode, 1);
  assert.deepEqual(
    ring.ofPod('default', 'web-2').map((e) => e.message),
    ['try again'],
  );
  assert.deepEqual(ring.ofPod('default', 'web-0'), []);
});
