import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedSerializer } from './keyed-serializer.ts';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('operations of one pod never overlap, in arrival order', async () => {
  const s = new KeyedSerializer();
  const events: string[] = [];
  const op = (name: string, ms: number) => async () => {
    events.push(`start ${name}`);
    await tick(ms);
    events.push(`end ${name}`);
    return name;
  };
  const results = await Promise.all([s.run('pod-a', op('add', 20)), s.run('pod-a', op('del', 1))]);
  assert.deepEqual(results, ['add', 'del']);
  assert.deepEqual(events, ['start add', 'end add', 'start del', 'end del']);
});

test('operations of different pods run in parallel', async () => {
  const s = new KeyedSerializer();
  const events: string[] = [];
  const op = (name: string, ms: number) => async () => {
    events.push(`start ${name}`);
    await tick(ms);
    events.push(`end ${name}`);
  };
  await Promise.all([s.run('pod-a', op('a', 20)), s.run('pod-b', op('b', 1))]);
  assert.deepEqual(events, ['start a', 'start b', 'end b', 'end a']);
});

test('a failed operation does not block the next one for the same pod', async () => {
  const s = new KeyedSerializer();
  const first = s.run('pod-a', async () => {
    throw new Error('boom');
  });
  const second = s.run('pod-a', async () => 'ok');
  await assert.rejects(first, /boom/);
  assert.equal(await second, 'ok');
  await tick(1);
  assert.equal(s.busyPods, 0);
});
