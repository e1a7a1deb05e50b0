// A ledger written by the agent before the journal (schema 3; the fixture was written by that
// code) still loads with every record, and the first commit after it moves it to schema 4.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Ledger } from '../ledger.ts';
import { FileLedgerStore } from '../storage/store.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { LEDGER_SCHEMA_VERSION } from './snapshot.ts';

const PATH = '/var/lib/vpcnet/ledger.json';
const clock = { now: () => 1_764_460_900_000 };

async function fixture(): Promise<string> {
  return readFile(new URL('../testing/fixtures/ledger.json.v3', import.meta.url), 'utf8');
}

test('a schema 3 ledger loads with every record and its lookups', async () => {
  const text = await fixture();
  assert.equal(JSON.parse(text).schemaVersion, 3);
  const fs = new MemoryLedgerFs();
  fs.files.set(PATH, text);
  const ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  assert.deepEqual(
    ledger.list().map((a) => [a.key.containerId, a.phase ?? 'done', a.branch ?? '-']),
    [
      ['regular1', 'done', '-'],
      ['regular2', 'done', '-'],
      ['regular3', 'adding', '-'],
      ['branch1', 'done', 'uid-db/eni-0b7'],
    ],
  );
  assert.equal(ledger.findByIp('10.0.1.12')?.key.containerId, 'regular2');
  assert.deepEqual(ledger.coolingAddresses(), [
    { ip: '10.0.1.20', eniId: 'eni-0a1', freedAt: 1_764_460_799_000 },
  ]);
  assert.deepEqual(
    ledger.bindings().map((b) => [b.key.eniId, b.supersededBy ?? 'live', b.resources.length > 0]),
    [
      ['eni-0b7', 'live', true],
      ['eni-0b6', 'uid-db/eni-0b7', false],
    ],
  );
  assert.deepEqual(
    ledger.bindingMembers('uid-db/eni-0b7').map((a) => a.key.containerId),
    ['branch1'],
  );
  assert.equal(ledger.addressInUse('10.0.3.7'), true, 'a live binding holds its address');
  assert.equal(ledger.addressInUse('10.0.3.6'), false, 'a superseded binding does not');
  assert.equal(ledger.addressInUse('10.0.1.30'), true, 'a recovered record holds its address');
  assert.deepEqual(
    ledger.pendingEnis().map((p) => [p.eniId, p.step]),
    [
      ['eni-0c1', 'attaching'],
      ['eni-0c2', 'detaching'],
    ],
  );
});

test('the first commit after a schema 3 ledger writes the current schema and a journal; reopen gives the same', async () => {
  const fs = new MemoryLedgerFs();
  fs.files.set(PATH, await fixture());
  const ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  ledger.removeCooling('10.0.1.20');
  await ledger.commit();
  const written = JSON.parse(fs.files.get(PATH) ?? '') as { schemaVersion: number; journal?: unknown };
  assert.equal(written.schemaVersion, LEDGER_SCHEMA_VERSION);
  assert.ok(written.journal, 'the snapshot names its journal');
  assert.ok(fs.files.has(`${PATH}.journal`));
  ledger.putPendingEni({ eniId: 'eni-0c1', step: 'deleting', since: 1_764_460_900_000 });
  await ledger.commit();
  fs.crash();
  const reopened = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  assert.deepEqual(reopened.snapshot(), ledger.snapshot());
});
