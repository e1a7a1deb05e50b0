import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SyncThread, type SyncThreadOptions } from './sync-thread.ts';

const OPTIONS: SyncThreadOptions = { loopMaxMs: 2, poolForMs: 1000, poolForMaxMs: 4000 };

/** A SyncThread on a clock the test moves; `sync(ms)` is one sync that takes `ms` wherever it runs. */
function placement() {
  let now = 0;
  const p = new SyncThread(() => now, OPTIONS);
  const ran: string[] = [];
  return {
    p,
    ran,
    wait(ms: number) {
      now += ms;
    },
    sync(ms: number) {
      return p.run(
        () => {
          ran.push('loop');
          now += ms;
        },
        async () => {
          ran.push('pool');
          now += ms;
        },
      );
    },
  };
}

describe('SyncThread', () => {
  test('syncs run on the loop while each takes at most loopMaxMs', async () => {
    const t = placement();
    await t.sync(0.2);
    await t.sync(2); // the bound itself is still quick
    await t.sync(1);
    assert.deepEqual(t.ran, ['loop', 'loop', 'loop']);
  });

  test('a slow sync on the loop sends the next ones to the pool for poolForMs, then one tries the loop', async () => {
    const t = placement();
    await t.sync(5); // ends at 5 ms: the pool until 1005
    assert.equal(t.p.next, 'pool');
    await t.sync(1);
    t.wait(998);
    await t.sync(1); // starts at 1004
    await t.sync(1); // starts at 1005
    assert.deepEqual(t.ran, ['loop', 'pool', 'pool', 'loop']);
  });

  test('each slow try on the loop doubles the stay on the pool, up to poolForMaxMs; a quick one resets it', async () => {
    const t = placement();
    const stays: number[] = [];
    for (let i = 0; i < 4; i++) {
      await t.sync(10); // on the loop, slow
      let ms = 0;
      while (t.p.next === 'pool') {
        t.wait(100);
        ms += 100;
      }
      stays.push(ms);
    }
    assert.deepEqual(stays, [1000, 2000, 4000, 4000]);
    await t.sync(0.5); // quick: the next slow one starts over
    await t.sync(10);
    t.wait(1000);
    assert.equal(t.p.next, 'loop');
  });

  test('each sync reports where it ran, and each slow one on the loop how long the pool keeps the next', async () => {
    let now = 0;
    const events: string[] = [];
    const p = new SyncThread(() => now, OPTIONS, {
      synced: (place) => events.push(place),
      slow: (ms, poolForMs) => events.push(`slow ${ms} ms, pool for ${poolForMs} ms`),
    });
    const sync = (ms: number) =>
      p.run(
        () => {
          now += ms;
        },
        async () => {
          now += ms;
        },
      );
    await sync(1);
    await sync(7);
    await sync(1);
    now += 1000;
    await sync(3);
    assert.deepEqual(events, [
      'loop',
      'loop',
      'slow 7 ms, pool for 1000 ms',
      'pool',
      'loop',
      'slow 3 ms, pool for 2000 ms',
    ]);
  });

  test('a failure is passed on; a slow failure on the loop counts as slow', async () => {
    let now = 0;
    const p = new SyncThread(() => now, OPTIONS);
    const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    await assert.rejects(
      p.run(
        () => {
          now += 50;
          throw eio;
        },
        async () => assert.fail('the first sync runs on the loop'),
      ),
      eio,
    );
    assert.equal(p.next, 'pool');
    await assert.rejects(
      p.run(
        () => assert.fail('a sync after a slow one goes to the pool'),
        async () => {
          throw eio;
        },
      ),
      eio,
    );
  });
});
