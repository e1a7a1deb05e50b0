import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type RecoveredRecord, recoveredHolderKey } from '../plan/recovered.ts';
import { parseLedgerSnapshot } from './format/snapshot.ts';
import { Ledger } from './ledger.ts';
import { MemoryLedgerStore } from './testing/memory-store.ts';

const clock = { now: () => 42_000 };

const kernelHeld: RecoveredRecord = {
  ip: '10.0.0.5',
  eniId: 'eni-1',
  resources: [
    { kind: 'veth', hostName: 'vpc0123456789ab', hostMac: '02:00:00:00:00:01', podIfName: 'eth0', mtu: 9001 },
    { kind: 'snat', ip: '10.0.0.5' },
  ],
  reason: 'ledgerMissing',
  recoveredAt: 1000,
};
const apiHeld: RecoveredRecord = {
  ip: '10.0.0.6',
  eniId: 'eni-1',
  resources: [],
  pod: { namespace: 'default', name: 'web', uid: 'u1' },
  reason: 'ledgerCorrupt',
  recoveredAt: 1000,
};

test('recovered records are durable, hold their addresses and leave the snapshot as before when there are none', async () => {
  const store = new MemoryLedgerStore();
  const ledger = await Ledger.open(store, clock);
  assert.equal('recovered' in ledger.snapshot(), false, 'no recovered records: the field is absent');
  ledger.putRecovered(kernelHeld);
  ledger.putRecovered(apiHeld);
  await ledger.commit();
  const reopened = await Ledger.open(store, clock);
  assert.deepEqual(reopened.recovered(), [kernelHeld, apiHeld]);
  assert.equal(reopened.addressInUse('10.0.0.5'), true);
  assert.deepEqual(
    reopened.assignments().map((a) => [a.ip, a.key]),
    [
      ['10.0.0.5', recoveredHolderKey(kernelHeld)],
      ['10.0.0.6', recoveredHolderKey(apiHeld)],
    ],
  );
});

test('removeRecovered removes exactly the record given, not one that replaced it', async () => {
  const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
  ledger.putRecovered(kernelHeld);
  const replaced = { ...kernelHeld, recoveredAt: 2000 };
  ledger.putRecovered(replaced);
  assert.equal(ledger.removeRecovered(kernelHeld), false);
  assert.equal(ledger.removeRecovered(replaced), true);
  assert.deepEqual(ledger.recovered(), []);
  assert.equal(ledger.addressInUse('10.0.0.5'), false);
});

test('a stored recovered record with a bad reason is refused with its field named', () => {
  assert.throws(
    () =>
      parseLedgerSnapshot({
        schemaVersion: 2,
        attachments: [],
        cooling: [],
        recovered: [{ ...apiHeld, reason: 'guess' }],
      }),
    (err: Error & { field?: string }) => err.field === 'recovered[0].reason',
  );
});
