// The file store's journal: what a commit writes, what a load replays, what it cuts off as a torn
// append and what it refuses as damage, and compaction (crash points of every step are in
// ledger.property.test.ts).
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { describe, test } from 'node:test';
import { NO_CHANGES } from '../changes.ts';
import {
  attachment,
  ids,
  JOURNAL,
  loadRefusal,
  open,
  PATH,
  snapshotOf,
  wroteSnapshot,
} from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { journalLine } from './journal-format.ts';
import { BURST_SLACK, FileLedgerStore } from './store.ts';

describe('ledger journal', () => {
  test('a commit after the first write appends one record to the journal and fdatasyncs it, nothing else', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    fs.calls.length = 0;
    ledger.put(attachment(2));
    await ledger.commit();
    // The journal is opened once and stays open: later commits neither open nor close it.
    assert.deepEqual(fs.calls, [`open ${JOURNAL}`, `append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    fs.calls.length = 0;
    ledger.put(attachment(3));
    await ledger.commit();
    assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `datasync ${JOURNAL}`]);
    assert.equal(fs.openHandles, 1);
  });

  test('the bytes one commit writes do not grow with the number of attachments', async () => {
    async function bytesOfOneCommit(attachments: number): Promise<{ commit: number; snapshot: number }> {
      const fs = new MemoryLedgerFs();
      const ledger = await open(fs);
      for (let n = 0; n < attachments; n++) ledger.put(attachment(n));
      await ledger.commit();
      const snapshot = fs.files.get(PATH)?.length ?? 0;
      const before = fs.bytesWritten;
      ledger.put({ ...attachment(7), createdAt: 99 });
      await ledger.commit();
      return { commit: fs.bytesWritten - before, snapshot };
    }
    const small = await bytesOfOneCommit(10);
    const large = await bytesOfOneCommit(1000);
    assert.ok(large.snapshot > 50 * small.snapshot, 'the test needs a much larger ledger');
    assert.ok(large.commit <= small.commit * 1.1, `10: ${small.commit} bytes, 1000: ${large.commit} bytes`);
    assert.ok(
      large.commit < large.snapshot / 100,
      `a commit wrote ${large.commit} of ${large.snapshot} bytes`,
    );
  });

  test('reopen replays the journal over the snapshot: puts, replacements and removals of every list', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    ledger.put(attachment(2));
    ledger.addCooling('10.0.9.1', 'eni-1', 5);
    ledger.putPendingEni({ eniId: 'eni-5', step: 'attaching', since: 1 });
    await ledger.commit();
    ledger.remove(attachment(1).key);
    ledger.put({ ...attachment(2), createdAt: 7 });
    ledger.put(attachment(3));
    await ledger.commit();
    ledger.removeCooling('10.0.9.1');
    ledger.addCooling('10.0.9.2', 'eni-1', 6);
    ledger.putPendingEni({ eniId: 'eni-5', step: 'deleting', since: 2 });
    ledger.putRecovered({
      ip: '10.0.9.3',
      eniId: 'eni-1',
      resources: [],
      reason: 'ledgerMissing',
      recoveredAt: 3,
    });
    await ledger.commit();
    // The first write was the snapshot (there was no journal yet), the two after it records.
    assert.equal(fs.files.get(JOURNAL)?.split('\n').length, 4, 'a header and two records');
    fs.crash();
    const reopened = await open(fs);
    assert.deepEqual(reopened.snapshot(), ledger.snapshot());
    assert.equal(reopened.findByIp('10.0.0.1'), undefined);
    assert.equal(reopened.findByIp('10.0.0.2')?.createdAt, 7);
  });

  test('a record torn at any byte is cut off: the state before it loads, and the next commit starts a fresh journal', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    const snapshot = fs.files.get(PATH) ?? '';
    const before = fs.files.get(JOURNAL) ?? '';
    ledger.put(attachment(2));
    await ledger.commit();
    const after = fs.files.get(JOURNAL) ?? '';
    for (let cut = before.length + 1; cut < after.length; cut++) {
      const torn = new MemoryLedgerFs();
      torn.files.set(PATH, snapshot);
      torn.files.set(JOURNAL, after.slice(0, cut));
      const reopened = await open(torn);
      assert.deepEqual(ids(reopened), ['c1'], `cut at ${cut}`);
      reopened.put(attachment(3));
      await reopened.commit();
      assert.ok(!torn.calls.includes(`append ${JOURNAL}`), 'nothing is appended after a torn record');
      assert.ok(torn.files.get(JOURNAL)?.endsWith('\n'));
      torn.crash();
      assert.deepEqual(ids(await open(torn)), ['c1', 'c3'], `cut at ${cut}`);
    }
  });

  test('a damaged record followed by good ones refuses the ledger, naming the journal and the line', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2, '10.0.0.99'));
    await ledger.commit();
    ledger.put(attachment(3));
    await ledger.commit();
    fs.files.set(JOURNAL, (fs.files.get(JOURNAL) ?? '').replace('10.0.0.99', '10.0.0.98'));
    const err = await loadRefusal(fs);
    assert.equal(err.path, JOURNAL);
    assert.equal(err.field, 'line 2');
    assert.match(err.message, /ledger journal .*ledger\.json\.journal cannot be trusted.*line 2: checksum/);
  });

  test('a record out of sequence (a lost record) refuses the ledger', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    const [header = ''] = (fs.files.get(JOURNAL) ?? '').split('\n');
    const { follows } = JSON.parse(header.split(' ').slice(2).join(' ')) as { follows: number };
    fs.files.set(JOURNAL, `${header}\n${journalLine(JSON.stringify({ seq: follows + 2 }))}`);
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'record 1.seq');
    assert.match(err.message, new RegExp(`expected ${follows + 1}, got ${follows + 2}`));
  });

  test('a record that does not parse (a bad field) refuses the ledger with the field named', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    const [header = ''] = (fs.files.get(JOURNAL) ?? '').split('\n');
    const { follows } = JSON.parse(header.split(' ').slice(2).join(' ')) as { follows: number };
    const bad = { seq: follows + 1, cooling: { put: [{ ip: '10.0.0.1', eniId: 'eni-1', freedAt: 'soon' }] } };
    fs.files.set(JOURNAL, `${header}\n${journalLine(JSON.stringify(bad))}`);
    assert.equal((await loadRefusal(fs)).field, 'record 1.cooling.put[0].freedAt');
  });

  test('a journal left over from before a compaction is never replayed', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2));
    await ledger.commit();
    const leftover = fs.files.get(JOURNAL) ?? '';
    // A compaction (everything as of now, without c2), and the machine stops before its journal.
    ledger.remove(attachment(2).key);
    await new FileLedgerStore(PATH, fs).save(ledger.snapshot());
    fs.files.set(JOURNAL, leftover);
    const reopened = await open(fs);
    assert.deepEqual(ids(reopened), ['c1'], 'the left-over record put c2 back');
    reopened.put(attachment(3));
    await reopened.commit();
    assert.ok(
      !(fs.files.get(JOURNAL) ?? '').includes('"c2"'),
      'the next write replaced the left-over journal',
    );
    assert.deepEqual(ids(await open(fs)), ['c1', 'c3']);
  });

  test('without a snapshot the journal is not replayed (a removed ledger is a fresh start)', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2));
    await ledger.commit();
    await fs.removeFile(PATH);
    assert.equal(await new FileLedgerStore(PATH, fs).load(), undefined);
    const fresh = await open(fs);
    fresh.put(attachment(3));
    await fresh.commit();
    assert.deepEqual(ids(await open(fs)), ['c3']);
  });

  test('a snapshot whose journal never got in place (a crash between the two) loads as the snapshot', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    // The first write on a fresh node: which journal is there, then the snapshot (write, fsync,
    // rename, syncDir); the machine stops before the journal.
    fs.haltAfter(5);
    await assert.rejects(ledger.commit(), /machine stopped/);
    fs.crash();
    assert.equal(fs.files.has(JOURNAL), false);
    const reopened = await open(fs);
    assert.deepEqual(ids(reopened), ['c1']);
    reopened.put(attachment(2));
    await reopened.commit();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2']);
  });

  test('past twice the bound a write compacts at once, however busy: a fresh snapshot with everything, a journal with only its header', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs, { minBytes: 2_000, snapshotFactor: 0 });
    let compactions = 0;
    for (let n = 0; n < 40; n++) {
      ledger.put(attachment(n));
      fs.calls.length = 0;
      await ledger.commit();
      if (wroteSnapshot(fs)) compactions++;
      assert.ok(
        (fs.files.get(JOURNAL)?.length ?? 0) < BURST_SLACK * 2_000 + 1_000,
        'the journal stays near twice its bound',
      );
    }
    assert.ok(compactions >= 3, `${compactions} compactions`);
    assert.ok(fs.openHandles <= 1, 'a compaction closes the replaced journal');
    fs.crash();
    assert.equal((await open(fs)).list().length, 40);
  });

  test('a failed fdatasync rejects the commit; the next write is a compaction and nothing follows a torn record', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2));
    fs.failNext.push('datasync');
    await assert.rejects(ledger.commit(), /cannot sync ledger journal .*injected datasync failure/);
    fs.calls.length = 0;
    ledger.put(attachment(3));
    await ledger.commit();
    assert.ok(!fs.calls.includes(`append ${JOURNAL}`));
    assert.ok(wroteSnapshot(fs));
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2', 'c3']);
  });

  test('setAside moves both the snapshot and the journal; the next load is a fresh start', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2));
    await ledger.commit();
    const journal = fs.files.get(JOURNAL);
    const store = new FileLedgerStore(PATH, fs);
    const aside = await store.setAside(Date.UTC(2026, 0, 2, 3, 4, 5));
    assert.equal(aside, `${PATH}.corrupt-2026-01-02T03-04-05.000Z`);
    assert.equal(fs.files.get(`${JOURNAL}.corrupt-2026-01-02T03-04-05.000Z`), journal);
    assert.equal(fs.files.has(JOURNAL), false);
    fs.crash();
    assert.equal(await store.load(), undefined);
  });

  test('a symlink planted at the journal is never appended through: the commit fails, the next write replaces the link', async () => {
    const dir = await fsp.mkdtemp(nodePath.join(os.tmpdir(), 'vpcnet-journal-link-'));
    try {
      const path = nodePath.join(dir, 'ledger.json');
      const victim = nodePath.join(dir, 'victim');
      await fsp.writeFile(victim, 'precious\n');
      const store = new FileLedgerStore(path);
      await store.save(snapshotOf(attachment(1)));
      await fsp.rm(`${path}.journal`);
      await fsp.symlink(victim, `${path}.journal`);
      const b = { ...NO_CHANGES, attachments: { put: [attachment(2)], removed: [] } };
      const whole = () => snapshotOf(attachment(1), attachment(2));
      await assert.rejects(store.saveChanges(b, whole), /cannot append to ledger journal/);
      await store.saveChanges(b, whole);
      assert.equal(await fsp.readFile(victim, 'utf8'), 'precious\n');
      assert.equal(
        (await fsp.lstat(`${path}.journal`)).isFile(),
        true,
        'the journal is a regular file again',
      );
      assert.deepEqual(
        (await new FileLedgerStore(path).load())?.attachments.map((a) => a.key.containerId),
        ['c1', 'c2'],
      );
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
