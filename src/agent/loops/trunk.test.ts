import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../infra/log.ts';
import type { Timers } from '../../infra/periodic.ts';
import { TrunkWatcher } from './trunk.ts';

/** Timers that run nothing until the test fires them. */
function heldTimers(): Timers & { fire(): void } {
  const pending = new Map<number, () => void>();
  let next = 0;
  return {
    setTimeout(fn) {
      pending.set(++next, fn);
      return next;
    },
    clearTimeout(h) {
      pending.delete(h as number);
    },
    fire() {
      const fns = [...pending.values()];
      pending.clear();
      for (const fn of fns) fn();
    },
  };
}

test('a failed trunk check is reported: the one before serving as start, later ones as loop', async () => {
  const failed: string[] = [];
  const timers = heldTimers();
  let labelFails = true;
  const watcher = new TrunkWatcher({
    manager: { refreshEnis: async () => [], trunkEni: () => undefined },
    dataplane: new Dataplane(new FakeKernel()),
    labels: {
      async set() {
        if (labelFails) throw new Error('the API answered 503');
      },
    },
    log: silentLogger,
    mtu: 9001,
    intervalMs: 5000,
    timers,
    failed: (when) => failed.push(when),
  });
  await watcher.start();
  assert.deepEqual(failed, ['start'], 'the node could not be labelled for a trunk');
  timers.fire();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(failed, ['start', 'loop']);
  labelFails = false;
  timers.fire();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(failed, ['start', 'loop'], 'a check that succeeds is no failure');
  await watcher.stop();
});
