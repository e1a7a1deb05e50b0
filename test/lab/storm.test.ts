// The CI storm: a short storm (npm run storm) against a lab of its own, once with a fixed seed and
// once with a random one and pods with security groups (printed in the test name: rerun it with
// `npm run storm -- --seed S --pods 6 --ops 40 --kill-rate 0.1 --fault-rate 0.15 [--sg-pods]`).
// Kills and faults are included; the lab is removed also on failure.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listNetns } from '../../src/lab/netns.ts';
import { randomSeed } from '../../src/storm/prng.ts';
import { formatFigures, runStorm } from '../../src/storm/storm.ts';
import { uniqueLabName } from '../lab-fixture.ts';

const FIXED_SEED = 20260817;
const randomRunSeed = randomSeed();

for (const [seed, sgPods] of [
  [FIXED_SEED, false],
  [randomRunSeed, true],
] as const) {
  const what = sgPods ? ', some pods with security groups' : '';
  test(`a short storm (seed ${seed}${what}) with kills and faults ends with no invariant violated and nothing left`, async (t) => {
    const labName = uniqueLabName('st');
    const log: string[] = [];
    const { figures, opLog } = await runStorm({
      seed,
      pods: 6,
      ops: 40,
      killRate: 0.1,
      faultRate: 0.15,
      sgShare: sgPods ? 0.35 : 0,
      sgPods,
      instanceType: undefined,
      labName,
      keepLab: false,
      log: (line) => log.push(line),
    });
    const report = `seed ${seed}\n${formatFigures(figures)}\noperation log:\n${opLog.join('\n')}`;
    t.diagnostic(formatFigures(figures).replaceAll('\n', '; '));
    assert.deepEqual(figures.violations, [], report);
    assert.equal(figures.operations, 40, report);
    const left = (await listNetns()).filter((n) => n.startsWith(`${labName}-`));
    assert.deepEqual(left, [], 'the storm left namespaces of its lab');
  });
}
