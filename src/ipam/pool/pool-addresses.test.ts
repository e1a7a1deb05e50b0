// Cooldown records have one owner: the pool manager writes them on release, drops them when they
// end or when a cooled address is handed out again, and restores them at init.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { attachmentKeyString } from '../../plan/attachment.ts';
import { attachmentFor, managerFactory, T0 } from '../testing/manager-setup.ts';

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

async function openLedger(store = new MemoryLedgerStore()): Promise<Ledger> {
  return Ledger.open(store, { now: () => T0 });
}

describe('PoolManager with a ledger', () => {
  test('release records the cooldown with the address’s ENI and the release time', async () => {
    const ledger = await openLedger();
    const { manager, clock } = await setup({ primarySecondaryIps: 2, deps: { ledger } });
    const got = manager.allocate('vpcnet/a/eth0');
    assert.ok(got);
    clock.t += 5_000;
    manager.release(got.ip);
    assert.deepEqual(ledger.coolingAddresses(), [{ ip: got.ip, eniId: 'eni-primary', freedAt: T0 + 5_000 }]);
  });

  test('unreserve (a failed fresh ADD) records no cooldown and frees the address at once', async () => {
    const ledger = await openLedger();
    const { manager } = await setup({ primarySecondaryIps: 1, deps: { ledger } });
    const got = manager.allocate('vpcnet/a/eth0');
    assert.ok(got);
    manager.unreserve(got.ip);
    assert.deepEqual(ledger.coolingAddresses(), []);
    assert.equal(manager.allocate('vpcnet/b/eth0')?.ip, got.ip);
  });

  test('releasing an address the pool lost track of still records its cooldown with the caller’s ENI', async () => {
    const ledger = await openLedger();
    const { manager } = await setup({ deps: { ledger } });
    manager.release('10.0.99.9', 'eni-gone');
    assert.deepEqual(ledger.coolingAddresses(), [{ ip: '10.0.99.9', eniId: 'eni-gone', freedAt: T0 }]);
  });

  test('a free address released anyway (the pool had lost its assignment) cools down too', async () => {
    const ledger = await openLedger();
    const { manager, pool, logs } = await setup({ primarySecondaryIps: 1, deps: { ledger } });
    const [ip] = [...pool.addresses('eni-primary').keys()];
    assert.ok(ip);
    manager.release(ip);
    assert.deepEqual(pool.state(ip), { kind: 'cooling', freedAt: T0 });
    assert.deepEqual(ledger.coolingAddresses(), [{ ip, eniId: 'eni-primary', freedAt: T0 }]);
    assert.ok(logs.some((l) => l.startsWith('warn released an address the pool did not hold')));
  });

  test('init restores assignments and cooldowns; ended cooldowns leave the ledger', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await openLedger(store);
    const { pool, manager, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmEniTarget: 0 },
      deps: { ledger },
      prepare: (cloud) => {
        const ips = cloud.enis.get('eni-primary')?.secondaryIps ?? [];
        ledger.put(attachmentFor('a', ips[0] ?? ''));
        ledger.addCooling(ips[1] ?? '', 'eni-primary', T0 - 10_000);
        ledger.addCooling(ips[2] ?? '', 'eni-primary', T0 - 29_000);
        ledger.addCooling('10.9.9.9', 'eni-gone', T0);
      },
    });
    const [held, cooling1, cooling2] = [...pool.addresses('eni-primary').keys()];
    assert.deepEqual(pool.state(held ?? ''), { kind: 'assigned', owner: 'vpcnet/a/eth0' });
    assert.equal(manager.allocate('vpcnet/b/eth0'), undefined, 'both cooling: cooldown survives restarts');
    assert.deepEqual(
      ledger.coolingAddresses().map((c) => c.ip),
      [cooling1, cooling2],
      'a cooling record for an address this node no longer has is dropped',
    );

    clock.t += 1_000;
    await manager.runPass();
    assert.deepEqual(
      ledger.coolingAddresses().map((c) => c.ip),
      [cooling1],
      'the ended cooldown is dropped',
    );
    await ledger.commit();
    assert.deepEqual(
      (await store.load())?.cooling.map((c) => c.ip),
      [cooling1],
    );
    assert.equal(manager.allocate('vpcnet/b/eth0')?.ip, cooling2);

    clock.t += 20_000;
    assert.equal(manager.allocate('vpcnet/c/eth0')?.ip, cooling1);
    assert.deepEqual(ledger.coolingAddresses(), [], 'handing out a cooled address drops its record');
  });

  test('crash recovery: a half-done ADD’s address, restored as assigned by init, cools down through release', async () => {
    const ledger = await openLedger();
    const { manager, pool } = await setup({
      primarySecondaryIps: 2,
      targets: { warmEniTarget: 0 },
      deps: { ledger },
      prepare: (cloud) => {
        const ip = cloud.enis.get('eni-primary')?.secondaryIps[0] ?? '';
        ledger.put({ ...attachmentFor('half', ip), phase: 'adding' });
      },
    });
    const half = ledger.assignments()[0];
    assert.ok(half);
    assert.deepEqual(pool.state(half.ip), { kind: 'assigned', owner: attachmentKeyString(half.key) });
    // What the agent's recovery does once its kernel state is gone.
    ledger.remove(half.key);
    manager.release(half.ip);
    assert.deepEqual(ledger.coolingAddresses(), [{ ip: half.ip, eniId: 'eni-primary', freedAt: T0 }]);
    const next = manager.allocate('vpcnet/next/eth0');
    assert.notEqual(next?.ip, half.ip, 'the half-done ADD’s address is not handed out while cooling');
  });
});
