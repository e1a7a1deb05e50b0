// The SIGTERM/SIGINT handler: one stop, never cut short by a second signal, bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { jsonLogger } from '../infra/log.ts';
import { stopOnSignal } from './stop-signal.ts';

function recorder() {
  const lines: { msg: string; [k: string]: unknown }[] = [];
  const log = jsonLogger('info', (l) => lines.push(JSON.parse(l) as { msg: string }));
  const exits: number[] = [];
  return { lines, log, exits, exit: (code: number) => exits.push(code) };
}

test('a finished stop exits 0; a second signal meanwhile is logged and starts nothing', async () => {
  const r = recorder();
  let stops = 0;
  let finish: () => void = () => undefined;
  const onSignal = stopOnSignal({
    log: r.log,
    exit: r.exit,
    stop: () => {
      stops++;
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    },
  });
  onSignal('SIGTERM');
  onSignal('SIGINT');
  onSignal('SIGTERM');
  await sleep(10);
  assert.equal(stops, 1);
  assert.deepEqual(r.exits, [], 'a second signal cut the stop short');
  finish();
  await sleep(10);
  assert.deepEqual(r.exits, [0]);
  assert.deepEqual(
    r.lines.map((l) => l.msg),
    [
      'stopping',
      'stop: already under way; signal ignored',
      'stop: already under way; signal ignored',
      'stopped',
    ],
  );
});

test('a stop that fails exits 1 with the reason', async () => {
  const r = recorder();
  stopOnSignal({
    log: r.log,
    exit: r.exit,
    stop: async () => Promise.reject(new Error('ledger write failed')),
  })('SIGTERM');
  await sleep(10);
  assert.deepEqual(r.exits, [1]);
  assert.match(String(r.lines.at(-1)?.error), /ledger write failed/);
});

test('a stop that hangs past the bound exits 1 once, and nothing exits again if it ends later', async () => {
  const r = recorder();
  let finish: () => void = () => undefined;
  stopOnSignal({
    log: r.log,
    exit: r.exit,
    boundMs: 30,
    stop: () =>
      new Promise<void>((resolve) => {
        finish = resolve;
      }),
  })('SIGTERM');
  await sleep(200);
  assert.deepEqual(r.exits, [1]);
  assert.equal(r.lines.at(-1)?.msg, 'stop did not finish in time; exiting without it');
  finish();
  await sleep(10);
  assert.deepEqual(r.exits, [1]);
});
