// The ip-exhausted taint through storms (VPCNET_NODE_READINESS=taint): three seeded storms with
// agent kills and EC2 faults on a small node (t3.medium: 15 addresses, so freed addresses cooling
// down can empty its pool and taint it for real). Every taint write is read from the emulator's API
// log and judged against the pool, looked at every quarter second (src/storm/taint-watch.ts), up
// to the end of the pods' cooldown after the storm, with the agent alive (src/storm/storm.ts). No
// storm may hold the taint while the node can serve by the taint's own rule, each must taint the
// node at least once (else it proves nothing), and no invariant may break. Rerun one with
// `npm run storm -- --seed S --pods 6 --ops 40 --kill-rate 0.1 --fault-rate 0.15 --readiness-taint --instance-type t3.medium`.
// Test turn: shared (it waits on its own lab's agents and timers; the taint's grace is 3 s for a 0.5 s look).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatFigures, formatTaints, runStorm } from '../../src/storm/storm.ts';
import { uniqueLabName } from '../lab-fixture.ts';

for (const seed of [11, 20260901, 77]) {
  test(`storm seed ${seed} in taint mode: no false ip-exhausted taint, no invariant violated`, async (t) => {
    const { figures, opLog, taints } = await runStorm({
      seed,
      pods: 6,
      ops: 40,
      killRate: 0.1,
      faultRate: 0.15,
      sgShare: 0,
      sgPods: false,
      instanceType: 't3.medium',
      labName: uniqueLabName('stt'),
      keepLab: false,
      readinessTaint: true,
      log: () => {},
    });
    assert.ok(taints, 'the taint was watched');
    const report = `seed ${seed}\n${formatFigures(figures)}\n${formatTaints(taints)}\noperation log:\n${opLog.join('\n')}`;
    t.diagnostic(formatTaints(taints).replaceAll('\n', '; '));
    assert.deepEqual(figures.violations, [], report);
    assert.ok(taints.applied >= 1, `the storm never emptied the pool into a taint\n${report}`);
    assert.equal(taints.falseTaints, 0, report);
  });
}
