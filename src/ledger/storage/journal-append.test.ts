// The journal on the real file system, with every thread of libuv's pool held: a staged record is
// written on the event loop's own thread, so an ADD's record of intent never waits for a pool
// thread (node-fs.ts); the fdatasync that makes a commit durable runs there too while the disk
// answers quickly, and waits for the pool once a sync on the loop was slow (sync-thread.ts).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { whilePoolIsBusy } from '../../infra/testing/busy-thread-pool.ts';
import { Ledger } from '../ledger.ts';
import { attachment, clock, NEVER_COMPACT } from '../testing/journal-fixtures.ts';
import { nodeLedgerFsWithSyncThread } from './node-fs.ts';
import { FileLedgerStore } from './store.ts';
import { SyncThread, type SyncThreadOptions } from './sync-thread.ts';

/** A ledger on a real journal, its first records committed, for `body`; removed afterwards. */
async function withJournal(
  options: SyncThreadOptions,
  body: (ledger: Ledger, path: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-journal-append-'));
  const path = join(dir, 'ledger.json');
  const fs = nodeLedgerFsWithSyncThread(new SyncThread(undefined, options));
  const ledger = await Ledger.open(new FileLedgerStore(path, fs, undefined, NEVER_COMPACT), clock);
  try {
    ledger.put(attachment(1));
    await ledger.commit(); // a compaction: the snapshot, then the journal opened by the next write
    ledger.put({ ...attachment(1), createdAt: 1 });
    await ledger.commit(); // the journal's first record and its fdatasync
    await body(ledger, path);
  } finally {
    await ledger.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function containerIds(path: string): Promise<string[]> {
  const again = await Ledger.open(new FileLedgerStore(path), clock);
  try {
    return again.list().map((a) => a.key.containerId);
  } finally {
    await again.close();
  }
}

/** Quick enough for any disk: every sync stays on the loop. */
const ALWAYS_LOOP: SyncThreadOptions = { loopMaxMs: 60_000, poolForMs: 1000, poolForMaxMs: 1000 };
/** Every sync on the loop counts as slow: after the first, they all go to the pool. */
const SLOW_DISK: SyncThreadOptions = { loopMaxMs: -1, poolForMs: 3_600_000, poolForMaxMs: 3_600_000 };

test('with every pool thread busy, a staged record reaches the journal and a commit becomes durable on the loop', async () => {
  await withJournal(ALWAYS_LOOP, async (ledger, path) => {
    await whilePoolIsBusy(async () => {
      ledger.put(attachment(2));
      await ledger.stage();
      ledger.put(attachment(3));
      await ledger.commit();
    });
    assert.deepEqual(await containerIds(path), ['c1', 'c2', 'c3']);
  });
});

test('once a sync on the loop was slow, a commit’s fdatasync waits for a pool thread', async () => {
  await withJournal(SLOW_DISK, async (ledger, path) => {
    let durable: Promise<void> | undefined;
    await whilePoolIsBusy(async () => {
      ledger.put(attachment(2));
      await ledger.stage();
      durable = ledger.commit();
      // A tick later the fdatasync is still waiting for a thread.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const state = await Promise.race([durable.then(() => 'synced'), Promise.resolve('waiting')]);
      assert.equal(state, 'waiting');
    });
    await durable;
    assert.deepEqual(await containerIds(path), ['c1', 'c2']);
  });
});
