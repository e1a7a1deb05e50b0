import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addAttachment } from './add.ts';
import { delAttachment } from './del.ts';
import { attachRequest, listPool, opContext } from './testing/op-context.ts';

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
