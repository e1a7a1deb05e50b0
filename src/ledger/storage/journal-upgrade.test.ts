// A ledger written by the agent before a journal named its boot and a snapshot the journal it
// replaced (schema 4 as of commit 75b4ff9; the fixture was written by that code,
// testing/fixtures/README.md) loads with every record. Its torn tail is still dropped and damage
// to it still refused; the first write moves it to the current form.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Ledger } from '../ledger.ts';
import { clock, ids, JOURNAL, PATH, wroteSnapshot } from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { FileLedgerStore, LedgerLoadError } from './store.ts';

async function fixture(): Promise<MemoryLedgerFs> {
  const read = (name: string) => readFile(new URL(`../testing/fixtures/${name}`, import.meta.url), 'utf8');
  const fs = new MemoryLedgerFs();
  fs.files.set(PATH, await read('ledger.json.v4'));
  fs.files.set(JOURNAL, await read('ledger.json.v4.journal'));
  return fs;
}

const open = (fs: MemoryLedgerFs) => Ledger.open(new FileLedgerStore(PATH, fs), clock);

test('a ledger of the previous form loads with every record, its first write moving it to the current form', async () => {
  const fs = await fixture();
  const ledger = await open(fs);
  assert.deepEqual(
    ledger.list().map((a) => [a.key.containerId, a.phase ?? 'done']),
    [
      ['pod1', 'done'],
      ['pod3', 'done'],
      ['pod4', 'done'],
      ['pod5', 'adding'],
    ],
  );
  assert.deepEqual(
    ledger.coolingAddresses().map((c) => c.ip),
    ['10.0.1.12'],
  );
  // Its journal names no boot: it is not appended to, the first write is a compaction.
  ledger.removeCooling('10.0.1.12');
  fs.calls.length = 0;
  await ledger.commit();
  assert.ok(wroteSnapshot(fs));
  const snapshot = JSON.parse(fs.files.get(PATH) ?? '') as { journal: { replaces: unknown } };
  assert.equal(typeof snapshot.journal.replaces, 'string', 'the snapshot names the journal it replaced');
  assert.match(fs.files.get(JOURNAL) ?? '', /"boot":"boot-1"/);
  fs.crash();
  assert.deepEqual((await open(fs)).snapshot(), ledger.snapshot());
});

test('a ledger of the previous form: a torn last record is dropped, a damaged one refused', async () => {
  const fs = await fixture();
  const journal = fs.files.get(JOURNAL) ?? '';
  fs.files.set(JOURNAL, journal.slice(0, -40));
  assert.deepEqual(ids(await open(fs)), ['pod1', 'pod3', 'pod4']);
  fs.files.set(JOURNAL, journal.replace(/"pod5"/, '"pod6"'));
  const err = await open(fs).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof LedgerLoadError);
  assert.equal(err.field, 'line 9');
  fs.files.set(JOURNAL, '\0'.repeat(journal.length));
  assert.ok((await open(fs).catch((e: unknown) => e)) instanceof LedgerLoadError, 'a zero-filled journal');
});
