// The dead-pod GC and pods with their own security groups: collecting a sandbox is its DEL, so the
// branch binding is settled as a DEL settles it (ownership: the holder keeps the branch ENI; the
// last sandbox takes the device, table and rules with it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedSerializer } from '../../infra/keyed-serializer.ts';
import { branchDeviceName } from '../../plan/branch-plan.ts';
import { FakePodPresence } from '../../pods/testing/fake-pod-presence.ts';
import { branchPod, branchWorld } from '../branch/testing/branch-world.ts';
import { DeadPodGc } from './dead-pod-gc.ts';

test('collecting the sandboxes of a dead branch-ENI pod settles its binding as their DELs would', async () => {
  const w = await branchWorld();
  const pod = branchPod(1);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'old')).exitCode, 0);
  assert.equal((await w.cni('ADD', pod, 'new')).exitCode, 0);
  const api = new FakePodPresence();
  const gone = new Set<string>();
  const clock = { t: 0 };
  const gc = new DeadPodGc({
    ctx: w.ctx,
    serializer: new KeyedSerializer(),
    pods: api,
    graceMs: 1000,
    monotonicNow: () => clock.t,
    netns: async (path) => (gone.has(path) ? 'gone' : 'present'),
  });
  const passAt = (t: number) => {
    clock.t = t;
    return gc.runOnce();
  };
  // The pod left the API; the replaced sandbox's namespace is gone, the holder's is not.
  w.ctx.kernel.deleteNetns('/var/run/netns/old');
  gone.add('/var/run/netns/old');
  await passAt(0);
  assert.deepEqual(
    (await passAt(1000)).collected.map((c) => c.key.containerId),
    ['old'],
  );
  assert.deepEqual(await w.holderProblems(pod), [], 'the holder keeps its branch ENI whole');
  assert.ok(w.ctx.kernel.link(branchDeviceName({ podUid: pod.uid, eniId: pod.eniId })));
  // Then the holder's namespace goes too: the last sandbox takes everything with it.
  w.ctx.kernel.deleteNetns('/var/run/netns/new');
  gone.add('/var/run/netns/new');
  await passAt(2000);
  assert.deepEqual(
    (await passAt(3000)).collected.map((c) => c.key.containerId),
    ['new'],
  );
  assert.deepEqual(w.ctx.ledger.list(), []);
  assert.deepEqual(w.ctx.ledger.bindings(), []);
  assert.equal(w.ctx.kernel.link(branchDeviceName({ podUid: pod.uid, eniId: pod.eniId })), undefined);
  assert.deepEqual(w.ctx.kernel.podResidue(), []);
  assert.deepEqual(w.ctx.kernel.ns().rules, []);
  assert.deepEqual(await w.orphans(), []);
});
