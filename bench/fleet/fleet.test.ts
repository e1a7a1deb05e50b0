// The fleet runner end to end at a small scale: real agents in a worker process against the
// emulator, a rollout, a node replaced mid-hold, EC2's limits halved, the deletes, and the count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFleet } from './fleet.ts';

test('a small fleet starts every pod, replaces a node, and leaves nothing behind', {
  timeout: 120_000,
}, async () => {
  const lines: string[] = [];
  const run = await runFleet({
    mode: 'vpcnet',
    nodes: 4,
    pods: 24,
    rolloutSeconds: 2,
    holdSeconds: 4,
    deleteSeconds: 2,
    settleSeconds: 8,
    churn: 0.25,
    seed: 11,
    workers: 1,
    instanceType: 'm5.xlarge',
    agentEnv: {},
    startRate: 15,
    prewarm: true,
    halveAtSeconds: 1,
    progress: (line) => lines.push(line),
  });
  const why = `${JSON.stringify(run, null, 1)}\n${lines.join('\n')}`;
  assert.equal(run.podsNeverStarted, 0, why);
  assert.equal(run.failedPodStarts, 0, why);
  // Every pod once, and the replaced node's pods once more on its replacement.
  assert.ok(run.podStarts > 24 && run.podStarts <= 24 + 24, why);
  assert.ok(
    lines.some((l) => l.includes('replacing 1 nodes')),
    why,
  );
  assert.ok(
    lines.some((l) => l.includes("EC2's limits halved")),
    why,
  );
  assert.ok(run.halved !== undefined, why);
  assert.ok(run.ec2Calls > 0 && run.ec2CallsPerPodStart > 0, why);
  assert.equal(run.agentRestarts, 0, why);
  assert.deepEqual([run.leakedAddresses, run.leakedEnis, run.leaks], [0, 0, []], why);
});
