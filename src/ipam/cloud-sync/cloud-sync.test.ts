import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import type { PoolManagerDeps } from '../pool/pool-manager.ts';
import { laggingDescribes } from '../testing/lagging-describes.ts';
import {
  attachmentFor,
  burst,
  type ManagerSetup,
  managerFactory,
  settle,
  T0,
} from '../testing/manager-setup.ts';

const W = 10_000; // the stale window of these tests
const SYNC: Partial<PoolManagerDeps> = { staleWindowMs: W, syncIntervalMs: 60_000 };
const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

async function syncAt(s: ManagerSetup, t: number): Promise<void> {
  s.clock.t = t;
  await s.manager.syncWithCloud();
}

function primarySecondaries(s: ManagerSetup): string[] {
  const eni = s.cloud.enis.get('eni-primary');
  assert.ok(eni);
  return eni.secondaryIps;
}

function warnings(s: ManagerSetup, text: string): string[] {
  return s.logs.filter((l) => l.startsWith('warn') && l.includes(text));
}

describe('the cloud sync acts on what two describes a stale window apart show', () => {
  test('an address assigned outside vpcnet joins the pool, free, once a second describe W later lists it', async () => {
    const s = await setup({ primarySecondaryIps: 2, deps: SYNC });
    primarySecondaries(s).push('10.0.200.1');
    await syncAt(s, T0 + W);
    await syncAt(s, T0 + 2 * W - 1);
    assert.equal(s.pool.state('10.0.200.1'), undefined, 'not before the stale window has passed');
    await syncAt(s, T0 + 2 * W);
    assert.deepEqual(s.pool.state('10.0.200.1'), { kind: 'free' });
    assert.equal(s.manager.health().sync.differences.addressAdded, 1);
    assert.equal(s.manager.health().sync.passes, 3);
    assert.equal(s.manager.health().sync.lastSyncAt, T0 + 2 * W);
  });

  test('free and cooling addresses EC2 no longer lists leave the pool; the others stay', async () => {
    const s = await setup({ primarySecondaryIps: 3, deps: SYNC });
    const [free, cooling, kept] = primarySecondaries(s);
    assert.ok(free && cooling && kept);
    s.manager.allocate('vpcnet/c1/eth0'); // takes `free`'s neighbour order: the first free one
    const held = s.pool.addressOf('vpcnet/c1/eth0');
    assert.equal(held, free);
    s.manager.release(free);
    s.cloud.enis.get('eni-primary')!.secondaryIps = [kept];
    await syncAt(s, T0 + W);
    await syncAt(s, T0 + 2 * W);
    assert.equal(s.pool.state(free), undefined, 'a cooling address EC2 dropped left the pool');
    assert.equal(s.pool.state(cooling), undefined, 'a free address EC2 dropped left the pool');
    assert.deepEqual(s.pool.state(kept), { kind: 'free' });
    assert.equal(s.manager.health().sync.differences.addressRemoved, 2);
  });

  test('an address a pod holds is never dropped because EC2 stops listing it: kept, warned about once, counted', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => T0 });
    const s = await setup({ primarySecondaryIps: 2, deps: { ...SYNC, ledger } });
    const got = s.manager.allocate('vpcnet/c1/eth0');
    assert.ok(got);
    ledger.put(attachmentFor('c1', got.ip));
    s.cloud.enis.get('eni-primary')!.secondaryIps = primarySecondaries(s).filter((ip) => ip !== got.ip);
    for (let i = 1; i <= 5; i++) {
      await syncAt(s, T0 + i * W);
      assert.deepEqual(s.pool.state(got.ip), { kind: 'assigned', owner: 'vpcnet/c1/eth0' });
    }
    assert.equal(warnings(s, 'EC2 no longer lists an address a pod holds').length, 1);
    assert.equal(s.manager.health().sync.differences.heldAddressMissing, 1);
    assert.deepEqual(
      s.manager.health().sync.takenFromPods,
      { enis: 0, addresses: 1 },
      'taken from its pod once, however many describes miss it',
    );
    // Its DEL frees it; only then may it leave the pool, after two more describes.
    ledger.remove(attachmentFor('c1', got.ip).key);
    s.manager.release(got.ip);
    await syncAt(s, T0 + 6 * W);
    assert.equal(s.pool.state(got.ip)?.kind, 'cooling');
    await syncAt(s, T0 + 7 * W);
    assert.equal(s.pool.state(got.ip), undefined);
  });

  test('a difference a describe in between did not show starts over', async () => {
    const s = await setup({ primarySecondaryIps: 2, deps: SYNC });
    const ips = primarySecondaries(s);
    ips.push('10.0.200.1');
    await syncAt(s, T0 + W);
    ips.pop();
    await syncAt(s, T0 + W + W / 2);
    ips.push('10.0.200.1');
    await syncAt(s, T0 + 2 * W);
    assert.equal(s.pool.state('10.0.200.1'), undefined, 'the first sighting no longer counts');
    await syncAt(s, T0 + 3 * W);
    assert.deepEqual(s.pool.state('10.0.200.1'), { kind: 'free' });
  });

  test('an address a ledger record holds that EC2 lists again joins the pool as that attachment’s, never free', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => T0 });
    ledger.put(attachmentFor('c1', '10.0.200.1'));
    const s = await setup({ primarySecondaryIps: 2, deps: { ...SYNC, ledger } });
    assert.equal(s.pool.state('10.0.200.1'), undefined, 'the describe at start missed it');
    primarySecondaries(s).push('10.0.200.1');
    await syncAt(s, T0 + W);
    await syncAt(s, T0 + 2 * W);
    assert.deepEqual(s.pool.state('10.0.200.1'), { kind: 'assigned', owner: 'vpcnet/c1/eth0' });
  });
});

describe('a stale describe cannot undo what vpcnet just did', () => {
  test('addresses vpcnet just gave back never come back into the pool, and a describe from before is not even a first sighting', async () => {
    const s = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
      deps: SYNC,
      wrapCloud: async (fake, clock) => (await laggingDescribes(fake, clock, W)).cloud,
    });
    s.clock.t = T0 + 5 * W;
    assert.deepEqual(await settle(s.manager), ['release 2']);
    const given = ['10.0.0.11', '10.0.0.12', '10.0.0.13'].filter((ip) => !primarySecondaries(s).includes(ip));
    assert.equal(given.length, 2);
    const start = s.clock.t;
    for (const dt of [1, W / 2, W - 1, W, W + 1, 2 * W, 3 * W]) {
      await syncAt(s, start + dt);
      if (dt === 1)
        assert.equal(s.manager.health().sync.unconfirmed, 0, 'the journal ignores the stale listing');
      for (const ip of given) assert.equal(s.pool.state(ip), undefined, `${ip} came back at +${dt} ms`);
    }
    assert.equal(s.manager.allocate('vpcnet/c1/eth0')?.ip, primarySecondaries(s)[0]);
  });

  test('an ENI vpcnet just attached stays in the pool while describes still miss it', async () => {
    const s = await setup({
      deps: SYNC,
      wrapCloud: async (fake, clock) => (await laggingDescribes(fake, clock, W)).cloud,
    });
    s.clock.t = T0 + 5 * W;
    await burst(s.manager, 4);
    const second = s.pool.enis()[1];
    assert.ok(second, 'a second ENI was attached');
    const start = s.clock.t;
    for (const dt of [1, W / 2, W, 2 * W, 3 * W]) {
      await syncAt(s, start + dt);
      assert.ok(s.pool.eni(second.eniId), `dropped at +${dt} ms`);
    }
    assert.equal(s.manager.health().sync.differences.eniGone, 0);
  });
});

describe('an ENI EC2 no longer lists', () => {
  test('is dropped from the pool with a warning; its attachment stays in the ledger and lostEni names the ENI', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => T0 });
    let foreign = '';
    const s = await setup({
      deps: { ...SYNC, ledger },
      targets: { warmEniTarget: 0 },
      prepare: (cloud) => {
        foreign = cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
      },
    });
    const got = s.manager.allocate('vpcnet/c1/eth0');
    assert.equal(got?.eniId, foreign);
    ledger.put(attachmentFor('c1', got.ip, foreign));
    delete s.cloud.enis.get(foreign)!.attachment; // detached outside vpcnet
    await syncAt(s, T0 + W);
    assert.ok(s.pool.eni(foreign), 'one describe is not enough');
    assert.equal(s.manager.lostEni(foreign), undefined);
    await syncAt(s, T0 + 2 * W);
    assert.equal(s.pool.eni(foreign), undefined);
    assert.equal(s.pool.state(got.ip), undefined);
    assert.equal(s.manager.attachedEniCount(), 1, 'it no longer takes a device slot');
    assert.equal(ledger.list().length, 1, 'ownership: its DEL cleans up, not the sync');
    assert.deepEqual(s.manager.lostEni(foreign), { eniId: foreign, since: T0 + 2 * W });
    assert.equal(warnings(s, 'EC2 no longer lists an ENI').length, 1);
    assert.equal(s.manager.health().sync.differences.eniGone, 1);
    assert.deepEqual(s.manager.health().sync.takenFromPods, { enis: 1, addresses: 1 });
    assert.deepEqual(
      s.detachingHook.map((d) => d.eni.eniId),
      [foreign],
      'its link config is torn down',
    );
    // Its DEL: the address is not in the pool; nothing throws, and the ENI is forgotten once no
    // record names it.
    s.manager.release(got.ip, foreign);
    ledger.remove(attachmentFor('c1', got.ip, foreign).key);
    await syncAt(s, T0 + 3 * W);
    assert.equal(s.manager.lostEni(foreign), undefined);
  });

  test('named by a ledger record after a restart is reported lost once two describes confirm it', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => T0 });
    ledger.put(attachmentFor('c1', '10.0.99.9', 'eni-gone'));
    const s = await setup({ primarySecondaryIps: 2, deps: { ...SYNC, ledger } });
    await syncAt(s, T0 + 1);
    assert.equal(s.manager.lostEni('eni-gone'), undefined);
    await syncAt(s, T0 + 1 + W);
    assert.equal(s.manager.lostEni('eni-gone')?.eniId, 'eni-gone');
    assert.deepEqual(
      s.manager.health().sync.takenFromPods,
      { enis: 1, addresses: 1 },
      'the ledger says a pod held an address on it',
    );
  });

  test('that held no pod address is not counted as taken from pods', async () => {
    let foreign = '';
    const s = await setup({
      deps: SYNC,
      targets: { warmEniTarget: 0 },
      prepare: (cloud) => {
        foreign = cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
      },
    });
    delete s.cloud.enis.get(foreign)!.attachment;
    await syncAt(s, T0 + W);
    await syncAt(s, T0 + 2 * W);
    assert.equal(s.manager.health().sync.differences.eniGone, 1);
    assert.deepEqual(s.manager.health().sync.takenFromPods, { enis: 0, addresses: 0 });
  });
});

test('a describe that lists no primary ENI is not trusted: nothing leaves the pool', async () => {
  let empty = false;
  const s = await setup({
    primarySecondaryIps: 2,
    deps: SYNC,
    wrapCloud: (fake) =>
      new Proxy(fake, {
        get(target, prop) {
          if (prop === 'describeInstanceEnis' && empty) return async () => [];
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
  });
  empty = true;
  for (let i = 1; i <= 3; i++) await assert.rejects(syncAt(s, T0 + i * W), /listed no primary ENI/);
  assert.equal(s.pool.enis().length, 1);
  assert.equal(s.pool.stats(s.clock.t).total, 2);
  assert.equal(s.manager.health().sync.failures, 3);
});
