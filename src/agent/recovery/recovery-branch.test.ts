// After a lost ledger, a pod with its own security groups keeps its network: its binding is rebuilt
// from the kernel's branch device, table and rules, the API's annotation and EC2's association;
// nothing it uses is collected, and its DEL (or a new sandbox of it) finds the binding as before.
// A device no live annotated pod claims, or one EC2 denies, is collected as before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EnforcingMode } from '../../plan/binding.ts';
import { branchDeviceName } from '../../plan/branch-plan.ts';
import { type BranchPod, branchPod, branchWorld } from '../branch/testing/branch-world.ts';

const devOf = (p: BranchPod) => branchDeviceName({ podUid: p.uid, eniId: p.eniId });

for (const mode of ['strict', 'standard'] as EnforcingMode[]) {
  test(`${mode}: a lost ledger rebuilds the branch binding; the start-up pass collects nothing of it, the pod stays whole`, async () => {
    const w = await branchWorld(mode);
    const pod = branchPod(1);
    w.pods.put(pod);
    assert.equal((await w.cni('ADD', pod, 's1')).exitCode, 0);
    const before = JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules });
    const pass = await w.restartWithLostLedger();
    assert.deepEqual(pass.collected, [], 'the start-up pass collected a live branch pod’s network');
    assert.ok(w.ctx.kernel.link(devOf(pod)), 'the branch device stays');
    assert.equal(JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules }), before);
    const [binding] = w.ctx.ledger.bindings();
    assert.equal(binding?.key.eniId, pod.eniId);
    assert.equal(binding?.mode, mode);
    assert.equal(
      w.ctx.ledger.recovered().find((r) => r.binding !== undefined)?.binding,
      `${pod.uid}/${pod.eniId}`,
    );
    assert.deepEqual(await w.orphans(), []);
    // Later passes leave it alone too.
    await w.reconcile();
    assert.ok(w.ctx.kernel.link(devOf(pod)));
    assert.equal(JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules }), before);
  });
}

test("after recovery, a new sandbox of the pod takes the binding over, and the old sandbox's late DEL leaves it whole", async () => {
  const w = await branchWorld();
  const pod = branchPod(2);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'old')).exitCode, 0);
  await w.restartWithLostLedger();
  assert.equal(
    (await w.cni('ADD', pod, 'new')).exitCode,
    0,
    'the claim is not refused as the recovered pod’s',
  );
  assert.deepEqual(await w.holderProblems(pod), []);
  w.ctx.kernel.deleteNetns('/var/run/netns/old');
  assert.equal((await w.cni('DEL', pod, 'old', '')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.ok(w.ctx.kernel.link(devOf(pod)));
  // The last sandbox goes: nothing of the pod is left.
  assert.equal((await w.cni('DEL', pod, 'new')).exitCode, 0);
  assert.equal(w.ctx.kernel.link(devOf(pod)), undefined);
  assert.deepEqual(w.ctx.ledger.bindings(), []);
  assert.deepEqual(await w.orphans(), []);
});

test("after recovery, the sandbox's own DEL removes the rebuilt binding with it", async () => {
  const w = await branchWorld('standard');
  const pod = branchPod(3);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'only')).exitCode, 0);
  await w.restartWithLostLedger();
  assert.equal((await w.cni('DEL', pod, 'only')).exitCode, 0);
  assert.equal(w.ctx.kernel.link(devOf(pod)), undefined);
  assert.deepEqual(w.ctx.ledger.bindings(), []);
  assert.deepEqual(w.ctx.ledger.recovered(), []);
  assert.deepEqual(w.ctx.kernel.ns().rules, []);
});

test("a branch device no live pod's annotation claims, or that EC2 denies, is not held: the start-up pass collects it", async () => {
  for (const gone of ['api', 'ec2'] as const) {
    const w = await branchWorld();
    const pod = branchPod(4);
    w.pods.put(pod);
    assert.equal((await w.cni('ADD', pod, 'x')).exitCode, 0);
    if (gone === 'api') w.pods.delete(pod);
    else w.pods.ec2.disassociate(pod.eniId);
    await w.restartWithLostLedger();
    assert.deepEqual(w.ctx.ledger.bindings(), [], gone);
    assert.equal(w.ctx.kernel.link(devOf(pod)), undefined, `${gone}: the device was held`);
  }
});

test("an annotation naming another pod's branch device rebuilds nothing for it (the device name is the pod's UID and ENI)", async () => {
  const w = await branchWorld();
  const victim = branchPod(5);
  w.pods.put(victim);
  assert.equal((await w.cni('ADD', victim, 'v')).exitCode, 0);
  const copier = { ...victim, name: 'copier', uid: 'uid-copier' };
  w.pods.annotate(copier);
  await w.restartWithLostLedger();
  assert.deepEqual(
    w.ctx.ledger.bindings().map((b) => b.key.podUid),
    [victim.uid],
  );
});
