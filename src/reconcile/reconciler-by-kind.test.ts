// A pass counts what it repaired and collected by resource kind (the agent's metrics), and tells
// its onPass observer the report it returns.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { MAIN_TABLE } from '../plan/pod-plan.ts';
import type { ReconcileReport } from './reconciler.ts';
import { world } from './testing/reconcile-world.ts';

test('repairs count by the kind of each missing piece, a rebuilt pod network as podNetwork', async () => {
  const passes: ReconcileReport[] = [];
  const w = await world({ onPass: (r) => passes.push(r) });
  const drifted = await w.attach();
  const rebuilt = await w.attach();
  const ip = attachmentIp(drifted) ?? '';
  w.kernel.deleteRoute('node', `${ip}/32`);
  w.kernel.deleteRule({ priority: 512, to: `${ip}/32`, table: MAIN_TABLE });
  w.kernel.deleteSnatElement(ip);
  w.kernel.deleteLink(attachmentHostVeth(rebuilt));
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.byKind.repaired, { route: 1, rule: 1, snat: 1, podNetwork: 1 });
  assert.deepEqual(report.byKind.collected, {});
  assert.equal(passes.length, 1);
  assert.equal(passes[0], report, 'the observer gets the report the pass returns');
  const again = await w.reconciler.runOnce();
  assert.deepEqual(again.byKind, { repaired: {}, collected: {} }, 'nothing left to count');
  assert.equal(passes.length, 2, 'told of every pass, also one that changed nothing');
});

test('collections count by the kind of each removed orphan', async () => {
  const w = await world();
  await w.attach();
  const orphan = await w.attach({ unrecorded: true });
  w.kernel.snatSet?.add('10.0.5.7');
  const report = await w.reconciler.runOnce();
  assert.ok(report.collected.includes(`veth ${attachmentHostVeth(orphan)}`));
  assert.deepEqual(report.byKind.collected, { veth: 1, rule: 2, snat: 2 });
  assert.equal(
    Object.values(report.byKind.collected).reduce((a, b) => a + b, 0),
    report.collected.length,
    'every collected object counted once',
  );
});
