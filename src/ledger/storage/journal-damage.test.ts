// Issue 22: a damaged journal is never taken for a torn append. Only what a crash leaves at the end
// of the journal (journal-format.ts) is dropped; everything else is refused (LedgerLoadError naming
// the journal, the line and what was found), so the agent keeps the files aside and recovers from
// the node instead of handing a live pod's address out again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  attachment,
  ids,
  JOURNAL,
  loadRefusal,
  open,
  PATH,
  wroteSnapshot,
} from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { journalLine } from './journal-format.ts';
import { FileLedgerStore } from './store.ts';

/** A ledger whose snapshot holds c1 and whose journal holds c2…c`last`, each committed durably. */
async function committed(fs: MemoryLedgerFs, last = 6) {
  const ledger = await open(fs);
  ledger.put(attachment(1));
  await ledger.commit(); // the first write: a snapshot, and the journal's first line
  for (let n = 2; n <= last; n++) {
    ledger.put(attachment(n));
    await ledger.commit();
  }
  return ledger;
}

const lines = (fs: MemoryLedgerFs) => (fs.files.get(JOURNAL) ?? '').split('\n').slice(0, -1);
const setLines = (fs: MemoryLedgerFs, l: readonly string[]) => fs.files.set(JOURNAL, `${l.join('\n')}\n`);

describe('a damaged journal is refused, never dropped as torn', () => {
  test('a zero-filled journal (unreadable from its first line) is refused, in the boot that wrote it or after a crash', async () => {
    for (const crashed of [false, true]) {
      const fs = new MemoryLedgerFs();
      await committed(fs);
      if (crashed) fs.crash();
      fs.files.set(JOURNAL, '\0'.repeat(fs.files.get(JOURNAL)?.length ?? 0));
      const err = await loadRefusal(fs);
      assert.equal(err.path, JOURNAL);
      assert.equal(err.field, 'line 1');
      assert.match(err.message, /journal .* cannot be trusted.*first line is not whole.*never torn/);
    }
  });

  test('a journal whose last three acknowledged records are damaged is refused at the first of them', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs);
    const l = lines(fs);
    assert.equal(l.length, 6, 'a first line and five records');
    setLines(
      fs,
      l.map((line, i) => (i >= 3 ? line.replace('"pod-', '"qod-') : line)),
    );
    for (const crashed of [false, true]) {
      if (crashed) fs.crash();
      const err = await loadRefusal(fs);
      assert.equal(err.path, JOURNAL);
      assert.equal(err.field, 'line 4');
      assert.match(
        err.message,
        /line 4: checksum .*a whole line that no lost write leaves; not a torn append/,
      );
    }
  });

  test('acknowledged records zeroed where they stood are refused within the boot that wrote them', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs);
    setLines(
      fs,
      lines(fs).map((line, i) => (i >= 3 ? '\0'.repeat(line.length) : line)),
    );
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'line 4');
    assert.match(err.message, /zero bytes within the boot that wrote it/);
  });

  test('a journal whose first record is damaged is refused: its first line, or the only record after it', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs, 2);
    const [first = '', record = ''] = lines(fs);
    fs.files.set(JOURNAL, first.slice(0, 12));
    assert.equal((await loadRefusal(fs)).field, 'line 1', 'a first line cut short');
    setLines(fs, [first.replace('"journal"', '"journak"'), record]);
    assert.equal((await loadRefusal(fs)).field, 'line 1', 'a first line changed, a record after it');
    setLines(fs, [first, record.replace('"pod-', '"qod-')]);
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'line 2');
    assert.match(err.message, /line 2: checksum/);
  });

  test('a record missing from the middle (a gap in the sequence) is refused', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs);
    const l = lines(fs);
    setLines(fs, [...l.slice(0, 2), ...l.slice(3)]);
    assert.equal((await loadRefusal(fs)).field, 'record 2.seq');
  });

  test('an empty journal file is refused: a journal is created with its first line', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs, 2);
    fs.files.set(JOURNAL, '');
    assert.match((await loadRefusal(fs)).message, /line 1: the file is empty/);
  });
});

describe('the journal a snapshot names', () => {
  test('a journal that is missing after its snapshot replaced one is refused', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await committed(fs, 2);
    // A compaction over the journal there, then the journal is lost.
    await new FileLedgerStore(PATH, fs).save(ledger.snapshot());
    await fs.removeFile(JOURNAL);
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'journal');
    assert.match(err.message, /it is missing, yet its snapshot replaced journal [0-9a-f]+/);
  });

  test('a journal that is neither the snapshot’s nor the one it replaced is refused', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs, 2);
    const [, record = ''] = lines(fs);
    setLines(fs, [journalLine(JSON.stringify({ journal: 'f0f0f0f0', follows: 1 })).trimEnd(), record]);
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'header.journal');
    assert.match(err.message, /journal f0f0f0f0 is neither the snapshot's/);
  });
});

describe('what a crash leaves is dropped quietly', () => {
  test('a record the agent was writing when it died is cut off; the next write starts a fresh journal', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs, 3);
    fs.files.set(JOURNAL, `${fs.files.get(JOURNAL)}${journalLine('{"seq":4}').slice(0, 9)}`);
    const ledger = await open(fs);
    assert.deepEqual(ids(ledger), ['c1', 'c2', 'c3']);
    ledger.put(attachment(4));
    fs.calls.length = 0;
    await ledger.commit();
    assert.ok(wroteSnapshot(fs), 'nothing is appended after a torn record');
  });

  test('a journal of another boot is not appended to: after a crash the first write starts a fresh one', async () => {
    const fs = new MemoryLedgerFs();
    await committed(fs, 2);
    const restarted = await open(fs); // the same boot: the agent's process died
    restarted.put(attachment(3));
    fs.calls.length = 0;
    await restarted.commit();
    assert.ok(!wroteSnapshot(fs), 'within the boot, the journal goes on');
    fs.crash();
    const rebooted = await open(fs);
    rebooted.put(attachment(4));
    fs.calls.length = 0;
    await rebooted.commit();
    // So a journal's records are all of the boot its first line names (what a load may drop).
    assert.ok(wroteSnapshot(fs), 'after a crash, a fresh journal');
    assert.match(lines(fs)[0] ?? '', /"boot":"boot-2"/);
  });

  test('after a power cut, a batch of staged records that never reached the disk is dropped, cut off or zeros', async () => {
    for (const lost of ['cut', 'zeros'] as const) {
      for (const keep of [0, 0.3, 0.7]) {
        const fs = new MemoryLedgerFs();
        const ledger = await committed(fs, 2);
        for (const n of [3, 4, 5]) {
          ledger.put(attachment(n));
          await ledger.stage(); // written, not synced: never reported durable
        }
        fs.crash((_, unsynced) => keep * unsynced, lost);
        const got = ids(await open(fs));
        // What was committed, and of the batch only records that reached the disk whole, in order.
        assert.ok(got.length >= 2, `${lost} ${keep}: ${got.join(' ')}`);
        assert.deepEqual(got, ['c1', 'c2', 'c3', 'c4', 'c5'].slice(0, got.length), `${lost} ${keep}`);
      }
    }
  });
});
