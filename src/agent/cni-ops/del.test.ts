import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../infra/log.ts';
import type { LedgerChanges } from '../../ledger/changes.ts';
import type { LedgerSnapshot } from '../../ledger/format/snapshot.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { attachRequest, listPool, opContext } from '../testing/op-context.ts';
import { addAttachment } from './add.ts';
import { delAttachment } from './del.ts';

test('DEL removes exactly its attachment and releases its address for cooldown', async () => {
  const released: string[] = [];
  const ctx = await opContext(listPool(['10.0.1.5', '10.0.1.6'], released));
  await addAttachment(ctx, attachRequest('old', '/var/run/netns/p1'));
  await addAttachment(ctx, attachRequest('new', '/var/run/netns/p2'));
  await delAttachment(ctx, attachRequest('old', ''));
  assert.deepEqual(released, ['10.0.1.5']);
  assert.deepEqual(
    ctx.ledger.list().map((a) => a.key.containerId),
    ['new'],
  );
  assert.deepEqual(ctx.kernel.snatElements(), ['10.0.1.6']);
  assert.ok(ctx.kernel.ns().rules.some((r) => r.to === '10.0.1.6/32'));
});

test("a DEL with no record never removes a live attachment's rules, whatever its prevResult says", async () => {
  const ctx = await opContext(listPool(['10.0.1.5']));
  await addAttachment(ctx, attachRequest('live', '/var/run/netns/p1'));
  const before = ctx.kernel.podResidue();
  // A stale DEL whose prevResult names the live pod's address (the ledger lost its own record).
  await delAttachment(ctx, attachRequest('gone', '', {}, ['10.0.1.5']));
  assert.deepEqual(ctx.kernel.podResidue(), before);
  // With an address nobody holds, its leftover rule and SNAT element do go.
  await ctx.dataplane.kernel.run(
    { side: 'node' },
    [
      { op: 'ruleAdd', rule: { priority: 512, to: '10.0.1.7/32', table: 254 } },
      { op: 'snatAdd', ip: '10.0.1.7' },
    ],
    'stop',
  );
  await delAttachment(ctx, attachRequest('gone2', '', {}, ['10.0.1.7']));
  assert.deepEqual(ctx.kernel.podResidue(), before);
});

test('a DEL of a record whose address another record holds too keeps the address held, and says so', async () => {
  const released: string[] = [];
  const errors: unknown[] = [];
  const ctx = await opContext(listPool(['10.0.1.5'], released), {
    log: { ...silentLogger, error: (msg, fields) => void errors.push({ msg, ...fields }) },
  });
  await addAttachment(ctx, attachRequest('live', '/var/run/netns/p1'));
  // A twin of the live pod's record (refused at load; here as a bug would make it).
  const live = ctx.ledger.list()[0]!;
  const twinKey = { ...live.key, containerId: 'twin' };
  ctx.ledger.put({ ...live, key: twinKey, resources: live.resources.filter((r) => r.kind === 'vpcAddress') });
  await delAttachment(ctx, attachRequest('twin', ''));
  assert.deepEqual(released, [], 'the live pod’s address went back to the pool');
  assert.deepEqual(errors, [
    { msg: 'DEL kept an address another record holds', key: twinKey, ip: '10.0.1.5', holder: live.key },
  ]);
  await delAttachment(ctx, attachRequest('live', '/var/run/netns/p1'));
  assert.deepEqual(released, ['10.0.1.5']);
});

test('DEL of an unknown attachment, and a repeated DEL, succeed and change nothing else', async () => {
  const ctx = await opContext(listPool(['10.0.1.5']));
  await addAttachment(ctx, attachRequest('c1', '/var/run/netns/p1'));
  const before = ctx.kernel.podResidue();
  await delAttachment(ctx, attachRequest('never', undefined));
  assert.deepEqual(ctx.kernel.podResidue(), before);
  await delAttachment(ctx, attachRequest('c1', '/var/run/netns/p1'));
  await delAttachment(ctx, attachRequest('c1', '/var/run/netns/p1'));
  assert.deepEqual(ctx.kernel.podResidue(), []);
});

/** A ledger store whose next write fails while `failing` is set (a full or failing disk). */
class FailingStore extends MemoryLedgerStore {
  failing = false;
  override async saveChanges(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<void> {
    if (this.failing) throw new Error('EIO: i/o error, write');
    return super.saveChanges(changes, snapshot);
  }
}

test('a retried DEL whose first attempt could not write the removal answers only once the removal is on disk', async () => {
  const store = new FailingStore();
  const ctx = await opContext(listPool(['10.0.1.5']), {
    ledger: await Ledger.open(store, { now: Date.now }),
  });
  const req = attachRequest('c1', '/var/run/netns/p1');
  await addAttachment(ctx, req);
  store.failing = true;
  await assert.rejects(delAttachment(ctx, req), /EIO/);
  // The record is gone from memory, not from the disk: the retry finds no record to decide from.
  assert.equal(ctx.ledger.get(req.key), undefined);
  assert.deepEqual(
    (await store.load())?.attachments.map((a) => a.key.containerId),
    ['c1'],
  );
  store.failing = false;
  await delAttachment(ctx, req);
  assert.deepEqual(
    (await store.load())?.attachments ?? [],
    [],
    'the runtime was told the DEL succeeded while the disk still held the attachment',
  );
});
