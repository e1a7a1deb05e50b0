// A pod whose namespace holds more than the kernel driver reads there (a pod with NET_ADMIN added
// 300,000 routes) fails the pass for itself alone: the other pods are judged and repaired, the pass
// completes, and the failure names the pod's namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PodNamespaceTooLarge } from '../dataplane/errors.ts';
import { attachmentIp } from '../plan/attachment.ts';
import { world } from './testing/reconcile-world.ts';

test("a pod namespace too large to read is that pod's failure alone: the others are repaired and the pass completes", async () => {
  const w = await world();
  const flooded = await w.attach();
  const other = await w.attach();
  const read = w.kernel.readPod.bind(w.kernel);
  w.kernel.readPod = async (path, scope) => {
    if (path === flooded.netns)
      throw new PodNamespaceTooLarge(path, 'holds more than 10000 routes (table main, dev eth0)');
    return read(path, scope);
  };
  const ip = attachmentIp(other) ?? '';
  w.kernel.deleteRoute('node', `${ip}/32`);

  const report = await w.reconciler.runOnce();
  assert.deepEqual(
    report.repaired.map((r) => r.key),
    [other.key],
  );
  assert.equal(report.failures.length, 1);
  assert.deepEqual(report.failures[0]?.key, flooded.key);
  assert.match(report.failures[0]?.error ?? '', new RegExp(`${flooded.netns} holds more than 10000 routes`));
  assert.deepEqual(report.netnsGone, [], 'a pod that filled its namespace is not gone');
  const logged = w.logs.find((l) => l.msg === 'reconcile: pod namespace not read');
  assert.equal(logged?.level, 'warn');
  assert.deepEqual(await w.problems(other), []);
});
