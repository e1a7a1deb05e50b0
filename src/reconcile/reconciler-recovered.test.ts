// Recovered records of a lost ledger (src/plan/recovered.ts) are owned: GC never collects their
// kernel objects. Only the sweep releases them, and never in the pass at start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import type { NodeView } from '../plan/views.ts';
import { world } from './testing/reconcile-world.ts';

test('GC leaves what a recovered record holds; the sweep runs in later passes, not in the pass at start', async () => {
  const swept: NodeView[] = [];
  const w = await world({
    sweepRecovered: async (node) => {
      swept.push(node);
      return ['recovered x'];
    },
  });
  const lost = await w.attach({ unrecorded: true });
  const stray = await w.attach({ unrecorded: true });
  w.ledger.putRecovered({
    ip: attachmentIp(lost) ?? '',
    resources: lost.resources.filter((r) => r.kind !== 'vpcAddress' && !('side' in r && r.side === 'pod')),
    reason: 'ledgerMissing',
    recoveredAt: 1,
  });
  const atStart = await w.reconciler.runOnce({ startUp: true });
  assert.equal(swept.length, 0, 'the pass at start released a recovered record');
  assert.ok(w.kernel.veths().includes(attachmentHostVeth(lost)), 'GC collected a recovered veth');
  assert.ok(w.kernel.snatElements().includes(attachmentIp(lost) ?? ''));
  assert.ok(atStart.collected.includes(`veth ${attachmentHostVeth(stray)}`), 'what nobody holds still goes');
  const later = await w.reconciler.runOnce();
  assert.equal(swept.length, 1);
  assert.ok(later.collected.includes('recovered x'));
});
