import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PlanOptions, type PodOp, type StormOp, stormPlan } from './plan.ts';

const base: PlanOptions = { seed: 1, pods: 6, ops: 300, killRate: 0.08, faultRate: 0.08, sgShare: 0.3 };

function podOps(plan: readonly StormOp[]): PodOp[] {
  return plan.flatMap((op) =>
    op.kind === 'concurrent' ? op.ops : op.kind === 'kill' || op.kind === 'faults' ? [] : [op],
  );
}

test('the operation sequence is a pure function of the seed', () => {
  assert.deepEqual(stormPlan(base), stormPlan(base));
  assert.notDeepEqual(stormPlan(base), stormPlan({ ...base, seed: 2 }));
});

test('a plan deletes and replaces only live pods, never exceeds the pod count, and never touches one pod twice in a step', () => {
  for (let seed = 1; seed <= 50; seed++) {
    const plan = stormPlan({ ...base, seed });
    assert.equal(plan.length, base.ops);
    const live = new Set<string>();
    for (const step of plan) {
      const ops = step.kind === 'concurrent' ? step.ops : podOps([step]);
      assert.equal(new Set(ops.map((o) => o.pod)).size, ops.length, `seed ${seed}: one pod twice in a step`);
      for (const op of ops) {
        if (op.kind === 'create') {
          assert.ok(!live.has(op.pod), `seed ${seed}: ${op.pod} created twice`);
          live.add(op.pod);
        } else {
          assert.ok(live.has(op.pod), `seed ${seed}: ${op.kind} of ${op.pod} which is not live`);
          if (op.kind === 'delete') live.delete(op.pod);
        }
      }
      assert.ok(live.size <= base.pods, `seed ${seed}: ${live.size} pods live`);
    }
  }
});

test('a plan includes every kind of trouble the storm is for', () => {
  const plan = stormPlan({ ...base, ops: 2000 });
  const ops = podOps(plan);
  assert.ok(plan.some((s) => s.kind === 'kill'));
  assert.ok(
    ops.some((o) => o.kind === 'create' && o.killAfterMs !== undefined),
    'kill mid-ADD',
  );
  assert.ok(
    ops.some((o) => o.kind === 'delete' && o.killAfterMs !== undefined),
    'kill mid-DEL',
  );
  assert.ok(plan.some((s) => s.kind === 'concurrent'));
  assert.ok(plan.some((s) => s.kind === 'faults' && s.name === 'off'));
  for (const staleDel of ['early', 'late', 'concurrent']) {
    assert.ok(
      ops.some((o) => o.kind === 'replace' && o.staleDel === staleDel),
      staleDel,
    );
  }
  for (const del of ['duplicate', 'empty-netns'])
    assert.ok(
      ops.some((o) => o.kind === 'delete' && o.del === del),
      del,
    );
  assert.ok(ops.some((o) => o.kind === 'create' && o.sg));
  assert.ok(!podOps(stormPlan({ ...base, sgShare: 0 })).some((o) => o.kind === 'create' && o.sg));
});
