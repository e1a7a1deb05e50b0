// A reconcile pass leaves the runtime's own operations alone: an ADD still at work, a DEL queued in
// the pod's line before the repair, and the DEL still to come for a pod whose netns is gone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { podLineKey } from '../plan/pod-line.ts';
import { kernelState, nodeIdentities } from './testing/comparable-state.ts';
import { ENI_RULE_ID, world } from './testing/reconcile-world.ts';

test('a vanished pod netns is left to the runtime DEL: nothing is rebuilt or removed, and it is logged once', async () => {
  const w = await world();
  const att = await w.attach();
  w.kernel.deleteNetns(att.netns);
  const left = kernelState(w.kernel);
  w.kernel.ops.length = 0;
  for (let i = 0; i < 2; i++) {
    const report = await w.reconciler.runOnce();
    assert.deepEqual(report.netnsGone, [att.key]);
    assert.deepEqual(report.repaired, []);
    assert.deepEqual(report.collected, []);
  }
  assert.equal(kernelState(w.kernel), left, "the attachment's rules and SNAT element stay for its DEL");
  assert.deepEqual(w.kernel.ops, []);
  assert.equal(w.logs.filter((l) => l.msg.includes('pod netns gone')).length, 1);
});

test('an attachment whose ADD is still in phase adding is neither repaired nor collected', async () => {
  const w = await world();
  const att = await w.attach({ phase: 'adding' });
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  const left = kernelState(w.kernel);
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired, []);
  assert.deepEqual(report.collected, []);
  assert.equal(kernelState(w.kernel), left);
});

test('a DEL queued in the pod line before the repair wins: the pass sees the record gone and rebuilds nothing', async () => {
  const w = await world();
  const att = await w.attach();
  const line = podLineKey(att.pod, att.key);
  w.kernel.deleteLink(attachmentHostVeth(att));
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const del = w.serializer.run(line, async () => {
    await gate;
    await w.dp.remove(att.resources);
    w.ledger.remove(att.key);
  });
  w.kernel.ops.length = 0;
  const pass = w.reconciler.runOnce();
  // Wait until the pass's repair has queued behind the DEL in the pod's line.
  while (w.serializer.queued.filter((k) => k === line).length < 2) await new Promise((r) => setImmediate(r));
  assert.ok(!w.kernel.ops.some((o) => o.op.op === 'vethAdd'), 'the repair waits in the pod line');
  release();
  await del;
  const report = await pass;
  assert.deepEqual(report.repaired, []);
  assert.equal(
    w.kernel.veths().includes(attachmentHostVeth(att)),
    false,
    'the deleted pod network was not brought back',
  );
  assert.deepEqual(nodeIdentities(await w.dp.observeNode()), [ENI_RULE_ID]);
});
