// A ledger whose records break what the lookups and the DEL take for granted (invariants.ts) is
// refused like a damaged one, whether the snapshot holds the records or the journal's (CRC-valid)
// records made them: otherwise the DEL of one twin frees what the other still uses.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Attachment } from '../../plan/attachment.ts';
import type { BranchBinding } from '../../plan/binding.ts';
import { FileLedgerStore } from '../storage/store.ts';
import { attachment, JOURNAL, loadRefusal, open, PATH, snapshotOf } from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import type { LedgerSnapshot } from './snapshot.ts';

function binding(uid: string, ip: string, vlanId: number, more: Partial<BranchBinding> = {}): BranchBinding {
  return {
    key: { podUid: uid, eniId: `eni-${uid}` },
    pod: { namespace: 'default', name: uid, uid },
    vlanId,
    mac: '02:00:00:00:00:09',
    ip,
    subnetCidr: '10.0.3.0/24',
    gateway: '10.0.3.1',
    trunkDev: 'eth1',
    table: 1000 + vlanId,
    mode: 'strict',
    driver: 'vlan',
    mtu: 9001,
    resources: [],
    createdAt: 1,
    ...more,
  };
}

/** A sandbox of the pod of binding `b` (no address of its own: the binding's). */
function sandbox(n: number, b: BranchBinding): Attachment {
  const a = attachment(n);
  return { ...a, branch: `${b.key.podUid}/${b.key.eniId}`, resources: a.resources.slice(1, 2) };
}

function stored(snapshot: LedgerSnapshot): MemoryLedgerFs {
  const fs = new MemoryLedgerFs();
  fs.files.set(PATH, JSON.stringify(snapshot));
  return fs;
}

describe('records that break the ledger’s invariants are refused at load', () => {
  test('two attachments with one address in the snapshot', async () => {
    const err = await loadRefusal(stored(snapshotOf(attachment(1), attachment(2, '10.0.0.1'))));
    assert.equal(err.path, PATH);
    assert.equal(err.field, 'attachments[vpcnet/c2/eth0]');
    assert.match(err.message, /holds address 10\.0\.0\.1, as attachments\[vpcnet\/c1\/eth0\] does/);
  });

  test('two attachments with one host veth in the snapshot', async () => {
    const twin = attachment(2);
    const veth = { ...attachment(1).resources[1]! };
    const err = await loadRefusal(
      stored(
        snapshotOf(attachment(1), {
          ...twin,
          resources: twin.resources.map((r) => (r.kind === 'veth' ? veth : r)),
        }),
      ),
    );
    assert.match(
      err.message,
      /attachments\[vpcnet\/c2\/eth0\]: holds host veth vpc1, as attachments\[vpcnet\/c1\/eth0\] does/,
    );
  });

  test('two IPv6 pods with one address', async () => {
    const v6 = (n: number): Attachment => ({
      ...attachment(n),
      resources: [{ kind: 'ipv6Address', side: 'pod', dev: 'eth0', cidr: '2001:db8::5/128' }],
    });
    assert.match((await loadRefusal(stored(snapshotOf(v6(1), v6(2))))).message, /holds address 2001:db8::5/);
  });

  test('twins made by CRC-valid journal records are refused, the journal named', async () => {
    const fs = new MemoryLedgerFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2, '10.0.0.1'));
    await ledger.commit();
    const err = await loadRefusal(fs);
    assert.equal(err.path, JOURNAL);
    assert.match(err.message, /with its journal replayed is corrupt.*holds address 10\.0\.0\.1/);
  });

  test('an attachment of a branch ENI whose binding is not there', async () => {
    const b = binding('db', '10.0.3.7', 7);
    const err = await loadRefusal(stored({ ...snapshotOf(sandbox(1, b)), bindings: [] }));
    assert.equal(err.field, 'attachments[vpcnet/c1/eth0].branch');
  });

  test('two live bindings with one address, or one VLAN ID on one trunk', async () => {
    const a = binding('a', '10.0.3.7', 7);
    for (const twin of [binding('b', '10.0.3.7', 8), binding('b', '10.0.3.8', 7)]) {
      const err = await loadRefusal(stored({ ...snapshotOf(), bindings: [a, twin] }));
      assert.equal(err.field, 'bindings[b/eni-b]');
    }
  });

  test('a superseded binding may keep its address and VLAN ID: the new one owns them', async () => {
    const old = binding('old', '10.0.3.7', 7, { supersededBy: 'new/eni-new' });
    const fs = stored({ ...snapshotOf(), bindings: [old, binding('new', '10.0.3.7', 7)] });
    assert.equal((await new FileLedgerStore(PATH, fs).load())?.bindings.length, 2);
  });

  test('a binding whose holder is gone loads: a DEL of the holder writes that before its settle', async () => {
    const b = binding('db', '10.0.3.7', 7, { holder: attachment(1).key });
    const got = await new FileLedgerStore(
      PATH,
      stored({ ...snapshotOf(sandbox(2, b)), bindings: [b] }),
    ).load();
    assert.deepEqual(got?.bindings[0]?.holder, attachment(1).key);
  });
});
