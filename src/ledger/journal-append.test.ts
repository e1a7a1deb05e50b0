// The journal's appends on the real file system: a staged record is written on the event loop's own
// thread, so an ADD's record of intent never waits for a thread of libuv's pool (node-fs.ts); the
// fdatasync that makes it durable does.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { whilePoolIsBusy } from '../infra/testing/busy-thread-pool.ts';
import { Ledger } from './ledger.ts';
import { FileLedgerStore } from './store.ts';
import { attachment, clock, NEVER_COMPACT } from './testing/journal-fixtures.ts';

test('a staged record reaches the journal while every thread of libuv’s pool is busy; its sync waits for one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-journal-append-'));
  const path = join(dir, 'ledger.json');
  const ledger = await Ledger.open(new FileLedgerStore(path, undefined, undefined, NEVER_COMPACT), clock);
  try {
    ledger.put(attachment(1));
    await ledger.commit(); // a compaction: the snapshot, then the journal opened by the next write
    ledger.put({ ...attachment(1), createdAt: 1 });
    await ledger.commit();
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
    const again = await Ledger.open(new FileLedgerStore(path), clock);
    assert.deepEqual(
      again.list().map((a) => a.key.containerId),
      ['c1', 'c2'],
    );
    await again.close();
  } finally {
    await ledger.close();
    await rm(dir, { recursive: true, force: true });
  }
});
