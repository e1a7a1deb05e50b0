// A compaction put off until the ledger is quiet (store.ts, group-commit.ts): while commits keep
// coming, the journal grows past its bound and every commit is one append; once none has come for
// the quiet delay, the ledger compacts with no commit waiting for it. Past BURST_SLACK times the
// bound a write compacts at once (journal.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ledger } from '../ledger.ts';
import { attachment, clock, ids, JOURNAL, PATH, wroteSnapshot } from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { BURST_SLACK, FileLedgerStore, type JournalBound } from './store.ts';

const BOUND: JournalBound = { minBytes: 2_000, snapshotFactor: 0 };
const QUIET_MS = 30;

const openQuiet = (fs: MemoryLedgerFs) =>
  Ledger.open(new FileLedgerStore(PATH, fs, undefined, BOUND), clock, QUIET_MS);
const journalBytes = (fs: MemoryLedgerFs) => fs.files.get(JOURNAL)?.length ?? 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `seen` holds, for at most a second. */
async function until(seen: () => boolean, what: string): Promise<void> {
  for (const started = performance.now(); !seen(); await sleep(2)) {
    if (performance.now() - started > 1000) throw new Error(`waited a second for ${what}`);
  }
}

/** Commits attachments one by one, with no pause, until the journal is past its bound. */
async function pastTheBound(ledger: Ledger, fs: MemoryLedgerFs): Promise<number> {
  let n = 0;
  ledger.put(attachment(n++));
  await ledger.commit(); // the first write: a snapshot, and the journal
  while (journalBytes(fs) <= BOUND.minBytes) {
    ledger.put(attachment(n++));
    fs.calls.length = 0;
    await ledger.commit();
    assert.ok(!wroteSnapshot(fs), 'a commit before the bound is one append');
  }
  return n;
}

describe('compaction once the ledger is quiet', () => {
  test('past the bound, commits that keep coming append; the compaction follows once none came for the quiet delay', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    let n = await pastTheBound(ledger, fs);
    // Still busy: the next commit comes at once, and it appends too.
    ledger.put(attachment(n++));
    fs.calls.length = 0;
    await ledger.commit();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    assert.ok(journalBytes(fs) > BOUND.minBytes && journalBytes(fs) < BURST_SLACK * BOUND.minBytes);
    fs.calls.length = 0;
    await sleep(QUIET_MS * 4);
    assert.ok(wroteSnapshot(fs), 'quiet: the ledger compacted');
    assert.ok(journalBytes(fs) < 200, 'the new journal holds only its header');
    // Everything is on disk: a power cut right after loses nothing.
    fs.crash();
    assert.equal(ids(await openQuiet(fs)).length, n);
  });

  test('a commit made while the quiet compaction runs waits for it and is durable after it', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    const n = await pastTheBound(ledger, fs);
    fs.calls.length = 0;
    // Wait until the compaction has begun (its first call), then commit.
    await until(() => fs.calls.length > 0, 'the quiet compaction to begin');
    ledger.put(attachment(n));
    await ledger.commit();
    assert.ok(wroteSnapshot(fs));
    fs.crash();
    assert.equal(ids(await openQuiet(fs)).length, n + 1);
  });

  test('a quiet compaction that fails costs no commit: the next write compacts and keeps every change', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    const n = await pastTheBound(ledger, fs);
    fs.failNext.push('rename');
    fs.calls.length = 0;
    await until(() => fs.calls.some((c) => c.startsWith('rename ')), 'the quiet compaction to rename');
    await sleep(QUIET_MS); // its failure settles; nothing was waiting for it
    ledger.put(attachment(n));
    fs.calls.length = 0;
    await ledger.commit();
    assert.ok(wroteSnapshot(fs), 'the write after the failure is a compaction');
    fs.crash();
    assert.equal(ids(await openQuiet(fs)).length, n + 1);
  });

  test('closing the ledger cancels a compaction that waits for quiet', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    await pastTheBound(ledger, fs);
    fs.calls.length = 0;
    await ledger.close();
    await sleep(QUIET_MS * 4);
    assert.ok(!wroteSnapshot(fs), 'no compaction after close');
  });
});

describe('prepare: a due compaction written before the agent serves', () => {
  test('on a fresh ledger, prepare writes the snapshot and the journal; the first commit is one append', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    await ledger.prepare();
    assert.ok(wroteSnapshot(fs));
    fs.calls.length = 0;
    ledger.put(attachment(1));
    await ledger.commit();
    assert.deepEqual(fs.calls, [`open ${JOURNAL}`, `append ${JOURNAL}`, `datasync ${JOURNAL}`]);
  });

  test('with a journal past its bound, prepare compacts it; with nothing due it writes nothing', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    const n = await pastTheBound(ledger, fs);
    await ledger.close(); // an agent stopping before the quiet delay ran out
    const next = await openQuiet(fs);
    fs.calls.length = 0;
    await next.prepare();
    assert.ok(wroteSnapshot(fs));
    assert.ok(journalBytes(fs) < 200);
    fs.calls.length = 0;
    await next.prepare();
    assert.deepEqual(fs.calls, []);
    fs.crash();
    assert.equal(ids(await openQuiet(fs)).length, n);
  });

  test('a failed prepare rejects; no compaction is tried again until a commit comes, which compacts', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    fs.failNext.push('rename');
    await assert.rejects(ledger.prepare(), /injected rename failure/);
    fs.calls.length = 0;
    await sleep(QUIET_MS * 4);
    assert.deepEqual(fs.calls, [], 'no retry while nothing is committed');
    ledger.put(attachment(1));
    await ledger.commit();
    assert.ok(wroteSnapshot(fs));
    fs.crash();
    assert.deepEqual(ids(await openQuiet(fs)), ['c1']);
  });
});

describe('a compaction keeps the records of operations in flight', () => {
  // An ADD writes its record with phase `adding` before it touches the kernel; a compaction that
  // left it out would make the agent forget, after a crash, what a half-done ADD may have created.
  const adding = (n: number) => ({ ...attachment(n), phase: 'adding' as const });

  test('the first write of a fresh ledger (a compaction) keeps an adding record', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    ledger.put(adding(1));
    fs.calls.length = 0;
    await ledger.stage();
    assert.ok(wroteSnapshot(fs));
    fs.crash();
    assert.deepEqual((await openQuiet(fs)).list(), [adding(1)]);
  });

  test('a quiet compaction keeps an adding record staged before it', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await openQuiet(fs);
    const n = await pastTheBound(ledger, fs);
    ledger.put(adding(n));
    await ledger.stage();
    fs.calls.length = 0;
    await ledger.prepare();
    assert.ok(wroteSnapshot(fs), 'the quiet compaction ran');
    assert.ok(journalBytes(fs) < 200);
    fs.crash();
    assert.deepEqual((await openQuiet(fs)).get(adding(n).key), adding(n));
  });
});
