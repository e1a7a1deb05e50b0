// The ledger's ENI creations (eniCreates): durable through the journal and its replay, refused
// when malformed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LedgerFormatError, parseLedgerSnapshot } from './format/snapshot.ts';
import { open } from './testing/journal-fixtures.ts';
import { MemoryLedgerFs } from './testing/memory-fs.ts';

const creation = (token: string, createdAt = 1_000) => ({
  token,
  createdAt,
  subnetId: 'subnet-1',
  since: 1_500,
});

describe('ledger: ENI creations asked of EC2', () => {
  test('a creation is durable on commit, replayed from the journal, and gone once removed', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.putPendingEni({ eniId: 'eni-0', step: 'deleting', since: 1 }); // a first write: the snapshot
    await ledger.commit();
    ledger.putEniCreate(creation('t1'));
    ledger.putEniCreate(creation('t2', 2_000));
    await ledger.commit(); // a journal record
    assert.deepEqual((await open(fs)).eniCreates(), [creation('t1'), creation('t2', 2_000)]);
    // The attaching record replaces its creation in one write.
    ledger.removeEniCreate('t1');
    ledger.putPendingEni({ eniId: 'eni-1', step: 'attaching', since: 3 });
    await ledger.commit();
    const reopened = await open(fs);
    assert.deepEqual(reopened.eniCreates(), [creation('t2', 2_000)]);
    assert.deepEqual(
      reopened.pendingEnis().map((p) => p.eniId),
      ['eni-0', 'eni-1'],
    );
    assert.equal(ledger.removeEniCreate('t2'), true);
    assert.equal(ledger.removeEniCreate('t2'), false, 'a second removal changes nothing');
    await ledger.commit();
    assert.deepEqual((await open(fs)).eniCreates(), []);
    assert.equal((await open(fs)).snapshot().eniCreates, undefined, 'an empty list is not written');
  });

  test('a malformed or duplicated creation is refused, naming the field', () => {
    const base = { schemaVersion: 4, attachments: [], cooling: [], bindings: [] };
    const cases: [unknown[], string][] = [
      [[{ ...creation('t1'), token: '' }], 'eniCreates[0].token'],
      [[{ ...creation('t1'), createdAt: 'soon' }], 'eniCreates[0].createdAt'],
      [[{ token: 't1', createdAt: 1, since: 1 }], 'eniCreates[0].subnetId'],
      [[creation('t1'), creation('t1')], 'eniCreates[1].token'],
    ];
    for (const [eniCreates, field] of cases) {
      assert.throws(
        () => parseLedgerSnapshot({ ...base, eniCreates }),
        (err: unknown) => err instanceof LedgerFormatError && err.field === field,
        field,
      );
    }
  });
});
