import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAIN_TABLE } from '../plan/views.ts';
import { externalServiceRuleChanges, setupExternalServiceRules } from './external-service-rules.ts';
import { FakeKernel } from './testing/fake-kernel.ts';

const at = (to: string) => ({ priority: 1535, to, table: MAIN_TABLE });

test('each listed CIDR gets `to <cidr> lookup main` at 1535; one no longer listed goes; the rest is left alone', async () => {
  const kernel = new FakeKernel();
  kernel.addRule(at('203.0.113.0/24')); // from an earlier start (or aws-node), no longer listed
  kernel.addRule(at('198.51.100.0/24')); // listed and present: kept as it is
  kernel.addRule({ priority: 1535, from: '10.0.1.5/32', table: MAIN_TABLE }); // another selector: not ours
  kernel.addRule({ priority: 1535, to: '192.0.2.0/24', table: 7 }); // another table: not ours
  kernel.addRule({ priority: 1535, to: '192.0.2.0/24', table: MAIN_TABLE, other: ['fwmark'] });
  kernel.addRule({ priority: 1536, from: '10.0.1.5/32', table: 2 }); // a pod's rule
  await setupExternalServiceRules(kernel, ['198.51.100.0/24', '192.0.2.7/32']);
  const rules = (await kernel.readNode()).rules.map((r) => ({ ...r }));
  const ours = rules.filter(
    (r) => r.priority === 1535 && r.table === MAIN_TABLE && r.src === 'all' && !r.other,
  );
  assert.deepEqual(ours.map((r) => `${r.dst}/${r.dstlen ?? 32}`).sort(), ['192.0.2.7/32', '198.51.100.0/24']);
  assert.equal(rules.length, 6, 'the four rules that are not ours stay');
  assert.ok(
    !kernel.ops.some((o) => o.op.op === 'ruleAdd' && o.op.rule.to === '198.51.100.0/24'),
    'kept, not re-added',
  );
  // Idempotent, and an empty list removes every one of ours.
  const before = kernel.ops.length;
  await setupExternalServiceRules(kernel, ['198.51.100.0/24', '192.0.2.7/32']);
  assert.equal(kernel.ops.length, before);
  await setupExternalServiceRules(kernel, []);
  assert.equal((await kernel.readNode()).rules.filter((r) => r.priority === 1535).length, 3);
});

test('the changes are computed from the rules as the kernel lists them, deletions first', () => {
  const listed = [
    { priority: 1535, src: 'all', dst: '203.0.113.0', dstlen: 24, table: MAIN_TABLE },
    { priority: 1535, src: 'all', dst: '192.0.2.7', table: MAIN_TABLE },
  ];
  assert.deepEqual(externalServiceRuleChanges(listed, ['192.0.2.7/32', '198.51.100.0/24']), [
    { op: 'ruleDel', rule: at('203.0.113.0/24') },
    { op: 'ruleAdd', rule: at('198.51.100.0/24') },
  ]);
});

test("a rule the kernel refuses fails the set-up, naming the CIDR and the kernel's words", async () => {
  const kernel = new FakeKernel();
  kernel.failNext((op) => op.op === 'ruleAdd', 'RTNETLINK answers: Operation not permitted');
  await assert.rejects(
    setupExternalServiceRules(kernel, ['198.51.100.0/24']),
    /AWS_EXTERNAL_SERVICE_CIDRS rule for 198\.51\.100\.0\/24: RTNETLINK answers: Operation not permitted/,
  );
});
