import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LEDGER_SCHEMA_VERSION, LedgerFormatError, parseLedgerSnapshot } from './format/snapshot.ts';
import { Ledger } from './ledger.ts';
import { MemoryLedgerStore } from './testing/memory-store.ts';

const clock = { now: () => 42_000 };

/** A ledger file as schema 2 wrote it: no pendingEnis list. */
const V2_FILE = {
  schemaVersion: 2,
  attachments: [
    {
      key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' },
      pod: { namespace: 'default', name: 'web-0' },
      netns: '/var/run/netns/c1',
      createdAt: 1000,
      resources: [{ kind: 'vpcAddress', ip: '10.0.0.5', eniId: 'eni-1' }],
    },
  ],
  cooling: [{ ip: '10.0.0.9', eniId: 'eni-1', freedAt: 500 }],
  bindings: [],
};

describe('ledger schema 3: ENIs part-way through being created or freed', () => {
  test('a schema 2 file loads with its attachments and cooldowns and no pending ENI', () => {
    const snap = parseLedgerSnapshot(structuredClone(V2_FILE));
    assert.equal(snap.schemaVersion, LEDGER_SCHEMA_VERSION);
    assert.deepEqual(
      snap.attachments.map((a) => a.key.containerId),
      ['c1'],
    );
    assert.deepEqual(snap.cooling, V2_FILE.cooling);
    assert.deepEqual(snap.pendingEnis, []);
  });

  test('a schema 2 ledger opens, and its next write is the current schema with the pending ENIs', async () => {
    const store = new MemoryLedgerStore();
    await store.save(structuredClone(V2_FILE) as never);
    const ledger = await Ledger.open(store, clock);
    assert.equal(ledger.list().length, 1);
    ledger.putPendingEni({ eniId: 'eni-9', step: 'attaching', since: 42_000 });
    await ledger.commit();
    const reopened = await Ledger.open(store, clock);
    assert.deepEqual(reopened.pendingEnis(), [{ eniId: 'eni-9', step: 'attaching', since: 42_000 }]);
    assert.equal(reopened.snapshot().schemaVersion, LEDGER_SCHEMA_VERSION);
    assert.equal(reopened.list().length, 1, 'the v2 attachment survives the rewrite');
  });

  test('a pending ENI moves through its steps and goes; each change is durable on commit', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, clock);
    ledger.putPendingEni({ eniId: 'eni-1', step: 'detaching', attachmentId: 'attach-1', since: 1 });
    await ledger.commit();
    assert.deepEqual((await Ledger.open(store, clock)).pendingEnis(), [
      { eniId: 'eni-1', step: 'detaching', attachmentId: 'attach-1', since: 1 },
    ]);
    ledger.putPendingEni({ eniId: 'eni-1', step: 'deleting', since: 2 });
    await ledger.commit();
    assert.deepEqual((await Ledger.open(store, clock)).pendingEnis(), [
      { eniId: 'eni-1', step: 'deleting', since: 2 },
    ]);
    assert.equal(ledger.removePendingEni('eni-1'), true);
    assert.equal(ledger.removePendingEni('eni-1'), false, 'a second removal changes nothing');
    await ledger.commit();
    assert.deepEqual((await Ledger.open(store, clock)).pendingEnis(), []);
  });

  test('a detaching record without its attachment, an unknown step or a duplicate is refused', () => {
    const base = { ...structuredClone(V2_FILE), schemaVersion: 3 };
    const cases: [unknown[], string][] = [
      [[{ eniId: 'eni-1', step: 'detaching', since: 1 }], 'pendingEnis[0].attachmentId'],
      [[{ eniId: 'eni-1', step: 'vanishing', since: 1 }], 'pendingEnis[0].step'],
      [[{ eniId: '', step: 'deleting', since: 1 }], 'pendingEnis[0].eniId'],
      [
        [
          { eniId: 'eni-1', step: 'deleting', since: 1 },
          { eniId: 'eni-1', step: 'attaching', since: 2 },
        ],
        'pendingEnis[1].eniId',
      ],
    ];
    for (const [pendingEnis, field] of cases) {
      assert.throws(
        () => parseLedgerSnapshot({ ...base, pendingEnis }),
        (err: unknown) => err instanceof LedgerFormatError && err.field === field,
        field,
      );
    }
  });
});
