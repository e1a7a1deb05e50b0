// A reconcile pass collects what no attachment owns (host veths, pod rules, SNAT elements) and
// nothing else, deciding ownership from the ledger right before it removes anything.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { MAIN_TABLE } from '../plan/pod-plan.ts';
import { nodeIdentities, nodeOwned } from './testing/comparable-state.ts';
import { ENI_RULE_ID, world } from './testing/reconcile-world.ts';

test('GC collects orphaned host veths, pod rules and SNAT elements, and nothing else', async () => {
  const w = await world();
  const live = await w.attach();
  const orphan = await w.attach({ unrecorded: true });
  // Not ours to collect: a veth with another prefix (its rules and SNAT element name an address
  // nobody holds, so those go), a rule someone else made at our priority (extra selector), a rule
  // at another priority, the ENI's own rule.
  const foreignVeth = await w.attach({ unrecorded: true, vethPrefix: 'xyz', ip: '10.0.9.9', snat: false });
  w.kernel.addRule({ priority: 512, to: '10.0.7.7/32', table: MAIN_TABLE, other: ['fwmark'] });
  w.kernel.addRule({ priority: 1000, from: '10.0.7.8/32', table: 2 });
  w.kernel.addRule({ priority: 512, to: '10.0.5.5/32', table: MAIN_TABLE });
  w.kernel.addRule({ priority: 1536, from: '10.0.5.6/32', table: 3 });
  w.kernel.snatSet?.add('10.0.5.7');
  const orphanIp = attachmentIp(orphan);

  const report = await w.reconciler.runOnce();
  assert.deepEqual(
    report.collected.sort(),
    [
      'rule from 10.0.5.6 lookup 3 prio 1536',
      'rule from 10.0.9.9 lookup 2 prio 1536',
      `rule from ${orphanIp} lookup 2 prio 1536`,
      'rule to 10.0.5.5 lookup main prio 512',
      'rule to 10.0.9.9 lookup main prio 512',
      `rule to ${orphanIp} lookup main prio 512`,
      'snat element 10.0.5.7',
      `snat element ${orphanIp}`,
      `veth ${attachmentHostVeth(orphan)}`,
    ].sort(),
  );
  assert.deepEqual(
    nodeIdentities(await w.dp.observeNode()),
    [
      ...nodeOwned(live),
      `veth ${attachmentHostVeth(foreignVeth)}`,
      `route node 254 10.0.9.9 ${attachmentHostVeth(foreignVeth)}`,
      ENI_RULE_ID,
      'rule 512 - 10.0.7.7/32 - 254',
      'rule 1000 10.0.7.8/32 - - 2',
    ].sort(),
  );
  assert.deepEqual(await w.problems(live), []);
  assert.ok(w.logs.some((l) => l.msg === 'reconcile: collected resources no attachment owns'));
});

test('GC decides ownership right before removing: an ADD that recorded meanwhile keeps its resources', async () => {
  const w = await world();
  const pending = await w.attach({ unrecorded: true });
  const observe = w.dp.observeNode.bind(w.dp);
  // The ADD's 'adding' record lands after the pass has read the kernel.
  w.dp.observeNode = async () => {
    const seen = await observe();
    w.ledger.put({ ...pending, phase: 'adding' });
    return seen;
  };
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.collected, []);
  assert.ok(w.kernel.veths().includes(attachmentHostVeth(pending)));
  assert.deepEqual(await w.problems(pending), []);
});
