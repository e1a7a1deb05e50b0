// The Ledger's indexed lookups (what an ADD or DEL asks per operation) follow every mutation, and
// each write carries exactly the records changed since the last write that succeeded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Attachment } from '../plan/attachment.ts';
import type { BranchBinding } from '../plan/binding.ts';
import type { LedgerChanges } from './changes.ts';
import type { LedgerSnapshot } from './format/snapshot.ts';
import { Ledger } from './ledger.ts';
import type { LedgerStore } from './storage/store.ts';

const clock = { now: () => 42_000 };

function attachment(containerId: string, ip: string, branch?: string): Attachment {
  return {
    key: { network: 'vpcnet', containerId, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${containerId}` },
    netns: `/var/run/netns/${containerId}`,
    createdAt: 1000,
    resources: ip === '' ? [] : [{ kind: 'vpcAddress', ip, eniId: 'eni-1' }],
    ...(branch === undefined ? {} : { branch }),
  };
}

const binding: BranchBinding = {
  key: { podUid: 'uid-web', eniId: 'eni-b1' },
  pod: { namespace: 'default', name: 'web', uid: 'uid-web' },
  vlanId: 7,
  mac: '02:00:00:00:07:07',
  ip: '10.0.3.7',
  subnetCidr: '10.0.3.0/24',
  gateway: '10.0.3.1',
  trunkDev: 'ens7',
  table: 1001,
  mode: 'strict',
  driver: 'vlan',
  mtu: 9001,
  resources: [],
  createdAt: 1000,
};

/** A store that keeps the changes of each write, and fails the writes a test asks it to. */
class ChangesStore implements LedgerStore {
  readonly writes: LedgerChanges[] = [];
  failNext = false;

  async load(): Promise<LedgerSnapshot | undefined> {
    return undefined;
  }

  async save(): Promise<void> {
    throw new Error('this store takes changes only');
  }

  async saveChanges(changes: LedgerChanges): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('injected write failure');
    }
    this.writes.push(changes);
  }
}

describe('Ledger lookups', () => {
  test('findByIp and addressInUse follow an attachment whose address changes and its removal', async () => {
    const ledger = await Ledger.open(new ChangesStore(), clock);
    ledger.put(attachment('a', '10.0.0.1'));
    assert.equal(ledger.findByIp('10.0.0.1')?.key.containerId, 'a');
    ledger.put(attachment('a', '10.0.0.2'));
    assert.equal(ledger.findByIp('10.0.0.1'), undefined);
    assert.equal(ledger.addressInUse('10.0.0.1'), false);
    assert.equal(ledger.findByIp('10.0.0.2')?.key.containerId, 'a');
    ledger.remove(attachment('a', '').key);
    assert.equal(ledger.findByIp('10.0.0.2'), undefined);
    assert.equal(ledger.addressInUse('10.0.0.2'), false);
  });

  test('bindingMembers follows sandboxes joining, moving and leaving, in the order they joined', async () => {
    const ledger = await Ledger.open(new ChangesStore(), clock);
    const key = 'uid-web/eni-b1';
    ledger.put(attachment('s1', '', key));
    ledger.put(attachment('s2', '', key));
    ledger.put(attachment('s3', '', 'uid-other/eni-b2'));
    ledger.put({ ...attachment('s1', '', key), createdAt: 5 });
    assert.deepEqual(
      ledger.bindingMembers(key).map((a) => [a.key.containerId, a.createdAt]),
      [
        ['s1', 5],
        ['s2', 1000],
      ],
    );
    ledger.put(attachment('s2', '', 'uid-other/eni-b2'));
    ledger.remove(attachment('s1', '').key);
    assert.deepEqual(ledger.bindingMembers(key), []);
    assert.deepEqual(
      ledger.bindingMembers('uid-other/eni-b2').map((a) => a.key.containerId),
      ['s3', 's2'],
    );
  });

  test('a branch address is in use until its binding is superseded or removed; a recovered one until its record goes', async () => {
    const ledger = await Ledger.open(new ChangesStore(), clock);
    ledger.putBinding(binding);
    assert.equal(ledger.addressInUse('10.0.3.7'), true);
    ledger.putBinding({ ...binding, supersededBy: 'uid-other/eni-b2' });
    assert.equal(ledger.addressInUse('10.0.3.7'), false);
    ledger.putBinding(binding);
    assert.equal(ledger.removeBinding('uid-web/eni-b1'), true);
    assert.equal(ledger.addressInUse('10.0.3.7'), false);
    const recovered = { ip: '10.0.9.1', resources: [], reason: 'ledgerMissing', recoveredAt: 1 } as const;
    ledger.putRecovered(recovered);
    assert.equal(ledger.addressInUse('10.0.9.1'), true);
    ledger.removeRecovered(recovered);
    assert.equal(ledger.addressInUse('10.0.9.1'), false);
  });

  test('an ENI is held while an attachment or a recovered record with an address names it, as assignments() lists them', async () => {
    const ledger = await Ledger.open(new ChangesStore(), clock);
    const heldAsListed = (eniId: string) => ledger.assignments().some((a) => a.eniId === eniId);
    const both = (eniId: string) => [ledger.eniHeld(eniId), heldAsListed(eniId)];
    ledger.put(attachment('a', '10.0.0.1'));
    ledger.put(attachment('b', '10.0.0.2'));
    assert.deepEqual(both('eni-1'), [true, true]);
    ledger.remove(attachment('a', '').key);
    assert.deepEqual(both('eni-1'), [true, true], 'b still holds it');
    // Moved to another ENI (a rebuilt record): the old ENI is no longer held.
    ledger.put({
      ...attachment('b', ''),
      resources: [{ kind: 'vpcAddress', ip: '10.0.1.2', eniId: 'eni-2' }],
    });
    assert.deepEqual(both('eni-1'), [false, false]);
    assert.deepEqual(both('eni-2'), [true, true]);
    const recovered = {
      ip: '10.0.9.1',
      eniId: 'eni-3',
      resources: [],
      reason: 'ledgerMissing',
      recoveredAt: 1,
    } as const;
    ledger.putRecovered(recovered);
    assert.deepEqual(both('eni-3'), [true, true]);
    ledger.putRecovered({ eniId: 'eni-4', resources: [], reason: 'ledgerMissing', recoveredAt: 1 });
    assert.deepEqual(both('eni-4'), [false, false], 'without an address a recovered record holds no ENI');
    ledger.removeRecovered(recovered);
    assert.deepEqual(both('eni-3'), [false, false]);
  });
});

describe('what a write carries', () => {
  test('each write carries the records changed since the last one: put as they are then, or removed', async () => {
    const store = new ChangesStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    ledger.put(attachment('b', '10.0.0.2'));
    ledger.addCooling('10.0.0.9', 'eni-1', 3);
    await ledger.commit();
    ledger.remove(attachment('a', '').key);
    ledger.put(attachment('b', '10.0.0.3'));
    ledger.removeCooling('10.0.0.9');
    ledger.putPendingEni({ eniId: 'eni-7', step: 'attaching', since: 1 });
    ledger.removePendingEni('eni-7');
    await ledger.commit();
    const [first, second] = store.writes;
    assert.deepEqual(
      first?.attachments.put.map((a) => a.key.containerId),
      ['a', 'b'],
    );
    assert.deepEqual(first?.cooling.put, [{ ip: '10.0.0.9', eniId: 'eni-1', freedAt: 3 }]);
    assert.deepEqual(second?.attachments, { put: [attachment('b', '10.0.0.3')], removed: ['vpcnet/a/eth0'] });
    assert.deepEqual(second?.cooling, { put: [], removed: ['10.0.0.9'] });
    // Put and removed within one write: its removal is carried (the record never reached the disk).
    assert.deepEqual(second?.pendingEnis, { put: [], removed: ['eni-7'] });
    assert.deepEqual(second?.bindings, { put: [], removed: [] });
  });

  test('the changes of a failed write ride on the next one', async () => {
    const store = new ChangesStore();
    const ledger = await Ledger.open(store, clock);
    ledger.put(attachment('a', '10.0.0.1'));
    store.failNext = true;
    await assert.rejects(ledger.commit(), /injected write failure/);
    ledger.putBinding(binding);
    await ledger.commit();
    assert.equal(store.writes.length, 1);
    assert.deepEqual(
      store.writes[0]?.attachments.put.map((a) => a.key.containerId),
      ['a'],
    );
    assert.deepEqual(store.writes[0]?.bindings.put, [binding]);
  });
});
