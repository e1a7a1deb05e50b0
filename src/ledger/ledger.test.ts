import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Attachment, attachmentIp } from '../plan/attachment.ts';
import type { BranchBinding } from '../plan/binding.ts';
import type { LedgerSnapshot } from './format/snapshot.ts';
import { Ledger } from './ledger.ts';
import type { LedgerStore } from './storage/store.ts';
import { MemoryLedgerStore } from './testing/memory-store.ts';

const clock = { now: () => 42_000 };

function attachment(containerId: string, ip: string): Attachment {
  return {
    key: { network: 'vpcnet', containerId, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${containerId}` },
    netns: `/var/run/netns/${containerId}`,
    createdAt: 1000,
    resources: [{ kind: 'vpcAddress', ip, eniId: 'eni-1' }],
  };
}

/** A store whose saves complete only when the test says so. */
class GatedStore implements LedgerStore {
  readonly saved: LedgerSnapshot[] = [];
  readonly pending: { snapshot: LedgerSnapshot; finish: (err?: Error) => void }[] = [];

  async load(): Promise<LedgerSnapshot | undefined> {
    return this.saved.at(-1);
  }

  save(snapshot: LedgerSnapshot): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({
        snapshot,
        finish: (err) => {
          if (err) reject(err);
          else {
            this.saved.push(snapshot);
            resolve();
          }
        },
      });
    });
  }

  /** Completes the oldest in-flight save. */
  finish(err?: Error): LedgerSnapshot {
    const p = this.pending.shift();
    assert.ok(p, 'a save is in flight');
    p.finish(err);
    return p.snapshot;
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));

function track(p: Promise<void>): { state: () => 'pending' | 'resolved' | 'rejected' } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => {
      state = 'resolved';
    },
    () => {
      state = 'rejected';
    },
  );
  return { state: () => state };
}

describe('Ledger', () => {
  test('put, get, findByIp, list and remove work on attachment keys', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
    const a = attachment('a', '10.0.0.1');
    ledger.put(a);
    ledger.put(attachment('b', '10.0.0.2'));
    assert.equal(ledger.get(a.key), a);
    assert.equal(ledger.findByIp('10.0.0.2')?.key.containerId, 'b');
    assert.equal(ledger.findByIp('10.0.0.3'), undefined);
    assert.equal(ledger.remove(a.key), true);
    assert.equal(ledger.remove(a.key), false);
    assert.deepEqual(
      ledger.list().map((x) => x.key.containerId),
      ['b'],
    );
  });

  test('putting the same key twice keeps one record (the newest)', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
    ledger.put(attachment('a', '10.0.0.1'));
    ledger.put(attachment('a', '10.0.0.7'));
    assert.deepEqual(
      ledger.list().map((x) => attachmentIp(x)),
      ['10.0.0.7'],
    );
  });

  test('committed attachments and cooling addresses survive a reopen', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    ledger.addCooling('10.0.0.5', 'eni-1');
    ledger.addCooling('10.0.0.6', 'eni-2', 7);
    await ledger.commit();
    const reopened = await Ledger.open(store, clock);
    assert.deepEqual(reopened.list(), [attachment('a', '10.0.0.1')]);
    assert.deepEqual(reopened.coolingAddresses(), [
      { ip: '10.0.0.5', eniId: 'eni-1', freedAt: 42_000 },
      { ip: '10.0.0.6', eniId: 'eni-2', freedAt: 7 },
    ]);
  });

  test('uncommitted changes are not in the store', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    await ledger.commit();
    ledger.put(attachment('b', '10.0.0.2'));
    ledger.removeCooling('10.0.0.1');
    const reopened = await Ledger.open(store, clock);
    assert.deepEqual(
      reopened.list().map((x) => x.key.containerId),
      ['a'],
    );
  });

  test('commits issued together share one write', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, clock);
    const commits: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      ledger.put(attachment(`c${i}`, `10.0.0.${i}`));
      commits.push(ledger.commit());
    }
    await Promise.all(commits);
    assert.equal(store.saves, 1);
    assert.equal((await store.load())?.attachments.length, 10);
  });

  test('a commit with nothing new resolves without writing', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, clock);
    await ledger.commit();
    ledger.removeCooling('10.0.0.1'); // nothing to remove: not a change
    await ledger.commit();
    assert.equal(store.saves, 0);
  });

  test('changes made during a write wait for the next write, which carries them all', async () => {
    const store = new GatedStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    const first = track(ledger.commit());
    await tick();
    assert.equal(store.pending.length, 1);

    ledger.put(attachment('b', '10.0.0.2'));
    const second = track(ledger.commit());
    ledger.put(attachment('c', '10.0.0.3'));
    const third = track(ledger.commit());
    await tick();
    assert.equal(store.pending.length, 1, 'no second write while one is in flight');

    const written = store.finish();
    assert.equal(written.attachments.length, 1);
    await tick();
    assert.equal(first.state(), 'resolved');
    assert.equal(second.state(), 'pending', 'resolves only after a write that includes its change');
    assert.equal(store.pending.length, 1);

    assert.equal(store.finish().attachments.length, 3);
    await tick();
    assert.equal(second.state(), 'resolved');
    assert.equal(third.state(), 'resolved');
    assert.equal(store.pending.length, 0);
  });

  test('a commit issued during a write without new changes resolves with that write', async () => {
    const store = new GatedStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    const first = track(ledger.commit());
    await tick();
    const again = track(ledger.commit());
    store.finish();
    await tick();
    assert.equal(first.state(), 'resolved');
    assert.equal(again.state(), 'resolved');
    assert.equal(store.pending.length, 0);
  });

  test('a failed write rejects the commits it carried and the next write retries their changes', async () => {
    const store = new GatedStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    const failed = track(ledger.commit());
    await tick();
    ledger.put(attachment('b', '10.0.0.2'));
    const later = track(ledger.commit());
    store.finish(new Error('disk full'));
    await tick();
    assert.equal(failed.state(), 'rejected');
    assert.equal(later.state(), 'pending', 'not carried by the failed write');

    const retried = store.finish();
    await tick();
    assert.equal(later.state(), 'resolved');
    assert.deepEqual(
      retried.attachments.map((x) => x.key.containerId),
      ['a', 'b'],
      'the failed change rides on the next write',
    );
  });

  test('after a failed write, a commit with no new change writes again', async () => {
    const store = new GatedStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    const failed = ledger.commit();
    await tick();
    store.finish(new Error('EIO'));
    await assert.rejects(failed, /EIO/);
    const retry = track(ledger.commit());
    await tick();
    assert.equal(store.pending.length, 1);
    store.finish();
    await tick();
    assert.equal(retry.state(), 'resolved');
    assert.equal(store.saved.at(-1)?.attachments.length, 1);
  });

  test('open rejects a corrupt store instead of starting empty', async () => {
    const store: LedgerStore = {
      load: () => Promise.reject(new Error('ledger /x is corrupt')),
      save: () => Promise.resolve(),
    };
    await assert.rejects(Ledger.open(store, clock), /corrupt/);
  });
});

describe('branch bindings in the ledger', () => {
  const binding: BranchBinding = {
    key: { podUid: 'uid-web', eniId: 'eni-branch1' },
    pod: { namespace: 'default', name: 'web', uid: 'uid-web' },
    vlanId: 7,
    mac: '02:00:00:00:07:07',
    ip: '10.0.3.7',
    subnetCidr: '10.0.3.0/24',
    gateway: '10.0.3.1',
    trunkDev: 'ens7',
    table: 1001,
    mode: 'strict',
    driver: 'vlan',
    mtu: 9001,
    resources: [],
    createdAt: 1000,
  };
  const bindingKey = 'uid-web/eni-branch1';

  function sandbox(containerId: string): Attachment {
    return { ...attachment(containerId, ''), resources: [], branch: bindingKey };
  }

  test('a sandbox of a pod with security groups has its binding’s address; a regular one its own', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
    const regular = attachment('r1', '10.0.1.5');
    ledger.put(regular);
    ledger.put(sandbox('b1'));
    assert.equal(ledger.addressOf(sandbox('b1')), undefined, 'no binding recorded yet: no address');
    ledger.putBinding(binding);
    assert.deepEqual(ledger.addressOf(sandbox('b1')), { ip: '10.0.3.7', eniId: 'eni-branch1' });
    assert.deepEqual(ledger.addressOf(regular), { ip: '10.0.1.5', eniId: 'eni-1' });
    assert.deepEqual(
      ledger.bindingMembers(bindingKey).map((a) => a.key.containerId),
      ['b1'],
    );
  });

  test('a branch address is in use while its binding is not superseded', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
    assert.equal(ledger.addressInUse('10.0.3.7'), false);
    ledger.putBinding(binding);
    assert.equal(ledger.addressInUse('10.0.3.7'), true);
    ledger.putBinding({ ...binding, supersededBy: 'uid-other/eni-branch2' });
    assert.equal(ledger.addressInUse('10.0.3.7'), false, 'another pod’s binding has the address now');
    assert.equal(ledger.removeBinding(bindingKey), true);
    assert.equal(ledger.removeBinding(bindingKey), false);
  });
});
