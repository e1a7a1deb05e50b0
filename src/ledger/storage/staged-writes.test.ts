// Ledger.stage: a change written to the journal without an fdatasync (group-commit.ts, level
// `written`). It outlives the agent's process, not a power cut; a later commit syncs it without
// writing it again, and a failure on the way never lets a commit resolve over a lost change.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { attachment, ids, JOURNAL, open, wroteSnapshot } from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';

/** A ledger holding c1 durably, its journal open, with the calls so far cleared. */
async function ledgerWithOne(fs: MemoryLedgerFs) {
  const ledger = await open(fs);
  ledger.put(attachment(1));
  await ledger.commit();
  // The first write was a compaction; this one opens the journal.
  ledger.put({ ...attachment(1), createdAt: 1 });
  await ledger.commit();
  fs.calls.length = 0;
  return ledger;
}

describe('staged writes', () => {
  test('stage appends the change without an fdatasync: a restarted agent reads it, a power cut loses it', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`]);
    // The agent's process dies: the page cache keeps what was written.
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2']);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1']);
  });

  test('a commit after stage syncs what stage wrote without writing it again', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    await ledger.commit();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2']);
  });

  test('a commit with changes of its own after stage: one fdatasync covers both records', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    ledger.put(attachment(3));
    await ledger.commit();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2', 'c3']);
  });

  test('stage and commit in the same tick share one write, and it is synced', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    const staged = ledger.stage();
    ledger.put(attachment(3));
    await Promise.all([staged, ledger.commit()]);
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2', 'c3']);
  });

  test('a failed sync after stage rejects the commit; the next write is a compaction that keeps the staged change', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    fs.failNext.push('datasync');
    await assert.rejects(ledger.commit(), /cannot sync ledger journal .*injected datasync failure/);
    // A staged commit of nothing new no longer counts as written: the failure may have lost it.
    fs.calls.length = 0;
    await ledger.stage();
    assert.ok(wroteSnapshot(fs), `expected a compaction, got ${fs.calls.join(', ')}`);
    ledger.put(attachment(3));
    await ledger.commit();
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2', 'c3']);
  });

  test('closing the ledger syncs what was staged', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    await ledger.close();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2']);
  });

  test('a sync that failed while closing: the next commit is refused, the one after it compacts', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await ledgerWithOne(fs);
    ledger.put(attachment(2));
    await ledger.stage();
    fs.failNext.push('datasync');
    await ledger.close();
    // The failed fdatasync may have lost c2; a new descriptor's fdatasync would not say so.
    await assert.rejects(ledger.commit(), /cannot sync ledger journal .*an earlier fdatasync failed/);
    fs.calls.length = 0;
    await ledger.commit();
    assert.ok(wroteSnapshot(fs), `expected a compaction, got ${fs.calls.join(', ')}`);
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2']);
  });
});
