import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LedgerStore } from '../../ledger/storage/store.ts';
import { observedLedgerStore } from './observed-ledger-store.ts';

test('the timed ledger store passes every call through and reports each write with its outcome', async () => {
  const seen: boolean[] = [];
  let fail = false;
  const calls: string[] = [];
  const inner: LedgerStore = {
    load: async () => undefined,
    save: async () => {
      calls.push('save');
      if (fail) throw new Error('disk full');
    },
    saveChanges: async () => {
      calls.push('saveChanges');
    },
    writeChanges: async () => {
      calls.push('writeChanges');
      return false;
    },
    sync: async () => {
      calls.push('sync');
    },
    compactionDue: () => {
      calls.push('compactionDue');
      return true;
    },
    compactWhenQuiet: async () => {
      calls.push('compactWhenQuiet');
      return true;
    },
    close: async () => {
      calls.push('close');
    },
    setAside: async (at) => `ledger.json.corrupt-${at}`,
  };
  const store = observedLedgerStore(inner, (ms, ok) => {
    assert.ok(ms >= 0);
    seen.push(ok);
  });
  const snapshot = { version: 3 } as unknown as Parameters<LedgerStore['save']>[0];
  await store.save(snapshot);
  await store.saveChanges?.({} as never, () => snapshot);
  // An append without an fdatasync is passed on but not timed: it is no durable write.
  await store.writeChanges?.({} as never, () => snapshot);
  await store.sync?.();
  assert.equal(store.compactionDue?.(), true);
  assert.equal(await store.compactWhenQuiet?.(() => snapshot), true);
  await store.close?.();
  fail = true;
  await assert.rejects(store.save(snapshot), /disk full/);
  assert.deepEqual(calls, [
    'save',
    'saveChanges',
    'writeChanges',
    'sync',
    'compactionDue',
    'compactWhenQuiet',
    'close',
    'save',
  ]);
  // Every durable write is timed: a compaction made once the ledger is quiet is one.
  assert.deepEqual(seen, [true, true, true, true, false]);
  assert.deepEqual(
    Object.keys(store).sort(),
    Object.keys(inner).sort(),
    'no method of the inner store is left out',
  );
  assert.equal(
    await store.setAside?.(7),
    'ledger.json.corrupt-7',
    'setAside kept: a refused ledger is moved',
  );
  const bare = observedLedgerStore({ load: inner.load, save: inner.save }, () => {});
  assert.equal(bare.saveChanges, undefined, 'a store without incremental saves stays without');
  assert.equal(bare.setAside, undefined);
  assert.equal(
    bare.writeChanges,
    undefined,
    'nor does it gain staged writes (the ledger then saves durably)',
  );
  assert.equal(bare.sync, undefined);
});
