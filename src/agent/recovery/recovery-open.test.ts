// Opening the ledger at start: a damaged journal is handled as a damaged snapshot is (both files
// kept aside for an operator, the start goes on as a lost ledger), and a torn last record is not
// damage at all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../infra/log.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { FileLedgerStore } from '../../ledger/storage/store.ts';
import { MemoryLedgerFs } from '../../ledger/testing/memory-fs.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { openLedger } from './recovery.ts';

const PATH = '/var/lib/vpcnet/ledger.json';
const JOURNAL = `${PATH}.journal`;
const clock = { now: () => Date.UTC(2026, 10, 30, 12) };

function attachment(n: number): Attachment {
  return {
    key: { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${n}` },
    netns: `/var/run/netns/p${n}`,
    createdAt: n,
    resources: [{ kind: 'vpcAddress', ip: `10.0.1.${n}`, eniId: 'eni-1' }],
  };
}

/** A node whose ledger has a snapshot and a journal of two records after it. */
async function ledgerOnDisk(): Promise<MemoryLedgerFs> {
  const fs = new MemoryLedgerFs();
  const ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  for (const n of [1, 2, 3]) {
    ledger.put(attachment(n));
    await ledger.commit();
  }
  fs.crash();
  return fs;
}

test('a damaged journal record is refused: snapshot and journal are kept aside and the start is a lost ledger', async () => {
  const fs = await ledgerOnDisk();
  fs.files.set(JOURNAL, (fs.files.get(JOURNAL) ?? '').replace('10.0.1.2', '10.0.1.9'));
  const { ledger, loss } = await openLedger(new FileLedgerStore(PATH, fs), clock, silentLogger);
  assert.equal(loss?.reason, 'ledgerCorrupt');
  assert.match(loss?.error ?? '', /ledger journal .* cannot be trusted/);
  assert.deepEqual(ledger.list(), []);
  const stamp = '2026-11-30T12-00-00.000Z';
  assert.equal(loss?.keptAt, `${PATH}.corrupt-${stamp}`);
  assert.ok(fs.files.has(`${JOURNAL}.corrupt-${stamp}`), 'the journal is kept beside the snapshot');
  ledger.put(attachment(7));
  await ledger.commit();
  fs.crash();
  const again = await openLedger(new FileLedgerStore(PATH, fs), clock, silentLogger);
  assert.equal(again.loss, undefined);
  assert.deepEqual(
    again.ledger.list().map((a) => a.key.containerId),
    ['c7'],
  );
});

test('a journal whose last record is torn opens without a loss, with the records before it', async () => {
  const fs = await ledgerOnDisk();
  fs.files.set(JOURNAL, (fs.files.get(JOURNAL) ?? '').slice(0, -20));
  const { ledger, loss } = await openLedger(new FileLedgerStore(PATH, fs), clock, silentLogger);
  assert.equal(loss, undefined);
  assert.deepEqual(
    ledger.list().map((a) => a.key.containerId),
    ['c1', 'c2'],
  );
});

test('a zero-filled journal is refused, not cut off as torn, and logged at error level with the journal and the line', async () => {
  const fs = await ledgerOnDisk();
  fs.files.set(JOURNAL, '\0'.repeat(fs.files.get(JOURNAL)?.length ?? 0));
  const errors: Record<string, unknown>[] = [];
  const log = {
    ...silentLogger,
    error: (msg: string, fields?: Record<string, unknown>) => void errors.push({ msg, ...fields }),
  };
  const { ledger, loss } = await openLedger(new FileLedgerStore(PATH, fs), clock, log);
  assert.equal(loss?.reason, 'ledgerCorrupt');
  assert.deepEqual(ledger.list(), []);
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.msg, 'ledger refused as corrupt: kept aside; recovering from the node');
  assert.equal(errors[0]?.path, JOURNAL);
  assert.equal(errors[0]?.field, 'line 1');
  assert.match(String(errors[0]?.error), /first line is not whole: line 1: .*never torn/);
});
