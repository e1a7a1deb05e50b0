import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { apiStatus } from '../kube-api-error.ts';
import { podObject, status } from '../testing/scripted-kube-api.ts';
import { type PodWatchEvent, parsePodWatchEvent, podWatchEvents } from './pod-watch-events.ts';

const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

async function collect(stream: PassThrough, idleMs = 5000): Promise<PodWatchEvent[]> {
  const out: PodWatchEvent[] = [];
  for await (const e of podWatchEvents(stream, idleMs)) out.push(e);
  return out;
}

test('events split anywhere across chunks, even inside a multi-byte character, arrive whole', async () => {
  const pod = podObject('café-0', '9');
  const text = line('ADDED', pod) + line('DELETED', pod);
  const bytes = Buffer.from(text);
  const stream = new PassThrough();
  const events = collect(stream);
  const cut = bytes.indexOf(Buffer.from('é')) + 1;
  stream.write(bytes.subarray(0, cut));
  stream.write(bytes.subarray(cut, cut + 50));
  stream.end(bytes.subarray(cut + 50));
  const got = await events;
  assert.deepEqual(
    got.map((e) => [
      e.type,
      e.type === 'ADDED' || e.type === 'DELETED' ? e.pod.name : '',
      'resourceVersion' in e ? e.resourceVersion : '',
    ]),
    [
      ['ADDED', 'café-0', '9'],
      ['DELETED', 'café-0', '9'],
    ],
  );
});

test('an ERROR event carries the Status code (410: list again)', () => {
  const e = parsePodWatchEvent(line('ERROR', status(410, 'Expired', 'too old resource version: 5 (9)')));
  assert.equal(e.type, 'ERROR');
  assert.equal(e.type === 'ERROR' ? apiStatus(e.error) : undefined, 410);
  assert.match(e.type === 'ERROR' ? e.error.message : '', /410 Expired: too old resource version/);
});

test('a bookmark gives only its resourceVersion', () => {
  const e = parsePodWatchEvent(line('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: '77' } }));
  assert.deepEqual(e, { type: 'BOOKMARK', resourceVersion: '77' });
});

test('a line that is not an event of a pod fails the watch', () => {
  assert.throws(() => parsePodWatchEvent('{"type":"ADDED","obj'), /not JSON/);
  assert.throws(() => parsePodWatchEvent(line('SNAPSHOT', {})), /unknown type "SNAPSHOT"/);
  assert.throws(() => parsePodWatchEvent(line('ADDED', { metadata: { name: 'x' } })), /lacks metadata/);
});

test('a stream silent for idleMs ends the iteration and is destroyed', async () => {
  const stream = new PassThrough();
  stream.write(line('ADDED', podObject('a', '1')));
  const got = await collect(stream, 100);
  assert.equal(got.length, 1);
  assert.equal(stream.destroyed, true);
});

test('a stream that breaks fails the iteration', async () => {
  const stream = new PassThrough();
  const events = collect(stream);
  stream.destroy(new Error('socket hang up'));
  await assert.rejects(events, /socket hang up/);
});
