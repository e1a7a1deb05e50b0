// A pod-eni annotation is a claim that EC2 and the Kubernetes API decide: forged, copied or
// contradicted annotations are refused with nothing of another pod changed, and a VLAN ID is taken
// from another pod's binding only when the API no longer shows that pod with it and a fresh EC2
// read shows it on the claiming pod's branch ENI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admitBinding } from '../../bindings/admit.ts';
import { settleBinding } from '../../bindings/settle.ts';
import type { CniErrorJson } from '../../cni/errors.ts';
import type { EnforcingMode } from '../../plan/binding.ts';
import { branchDeviceName, planBranchAttachment } from '../../plan/branch-plan.ts';
import { identityOf } from '../../plan/kinds.ts';
import { listPool } from '../testing/op-context.ts';
import { type BranchPod, type BranchWorld, branchPod, branchWorld } from './testing/branch-world.ts';

const devOf = (p: BranchPod) => branchDeviceName({ podUid: p.uid, eniId: p.eniId });

function error(out: { exitCode: number; stdout: string }): CniErrorJson {
  assert.notEqual(out.exitCode, 0, `expected a failure: ${out.stdout}`);
  return JSON.parse(out.stdout) as CniErrorJson;
}

/** A victim pod with its own security groups, attached and whole. */
async function victimOn(w: BranchWorld, n = 1): Promise<BranchPod> {
  const victim = branchPod(n);
  w.pods.put(victim);
  assert.equal((await w.cni('ADD', victim, `victim${n}`)).exitCode, 0);
  assert.deepEqual(await w.holderProblems(victim), []);
  return victim;
}

/** Nothing of the victim changed: its binding is its own, whole, not superseded. */
async function victimWhole(w: BranchWorld, victim: BranchPod): Promise<void> {
  const b = w.ctx.ledger.bindings().find((x) => x.key.podUid === victim.uid);
  assert.equal(b?.supersededBy, undefined, 'the victim was superseded');
  assert.deepEqual(await w.holderProblems(victim), []);
  assert.equal(w.ctx.kernel.link(devOf(victim))?.mac, victim.mac);
  assert.equal(w.ctx.counters.get('supersededBindings'), 0);
}

test("a forged annotation naming another pod's VLAN, MAC and address with an ENI EC2 does not know is refused, and the victim keeps everything", async () => {
  const w = await branchWorld();
  const victim = await victimOn(w);
  const attacker: BranchPod = {
    ...branchPod(9, victim.vlanId, victim.ip),
    mac: victim.mac,
    eniId: 'eni-0000000000000f0e',
  };
  w.pods.annotate(attacker);
  const err = error(await w.cni('ADD', attacker, 'evil'));
  assert.equal(err.code, 11);
  assert.match(err.msg, /EC2 does not show branch ENI eni-0000000000000f0e on this node's trunk/);
  await victimWhole(w, victim);
  assert.equal(w.ctx.ledger.bindings().length, 1, 'no binding was recorded for the attacker');
  assert.equal(w.ctx.ledger.list().length, 1, 'no attachment was recorded for the attacker');
  assert.equal(w.ctx.counters.rejectedAnnotations().notOnTrunk, 1);
});

test("a real branch ENI of another node's trunk is refused", async () => {
  const w = await branchWorld();
  const elsewhere = branchPod(4);
  w.pods.annotate(elsewhere);
  w.pods.ec2.associate({
    eniId: elsewhere.eniId,
    trunkEniId: 'eni-000000000other',
    vlanId: elsewhere.vlanId,
    mac: elsewhere.mac,
    ip: elsewhere.ip,
    subnetId: 'subnet-0branch',
    subnetCidr: '10.0.8.0/24',
  });
  const err = error(await w.cni('ADD', elsewhere, 'a'));
  assert.equal(err.code, 11);
  assert.match(err.msg, /on this node's trunk/);
  assert.equal(w.ctx.kernel.link(devOf(elsewhere)), undefined);
});

test("a verbatim copy of a live pod's annotation is refused (121), naming the pod that holds it", async () => {
  const w = await branchWorld();
  const victim = await victimOn(w);
  const copier: BranchPod = { ...victim, name: 'copier', uid: 'uid-copier' };
  w.pods.annotate(copier);
  const err = error(await w.cni('ADD', copier, 'copy'));
  assert.equal(err.code, 121);
  assert.match(err.msg, /branch ENI eni-\w+ belongs to pod default\/sg-1 \(UID uid-sg-1\)/);
  assert.ok(w.pods.reads >= 1, 'the victim was read from the API itself, not a cache');
  await victimWhole(w, victim);
  assert.equal(w.ctx.counters.rejectedAnnotations().heldByLivePod, 1);
});

test('an annotation that contradicts EC2 (VLAN ID, MAC, address or subnet) is refused naming the field', async () => {
  for (const [field, wrong] of [
    ['vlanId', { vlanId: 77 }],
    ['ifAddress', { mac: '0a:00:00:00:ff:ff' }],
    ['privateIp', { ip: '10.0.8.99' }],
  ] as const) {
    const w = await branchWorld();
    const pod = branchPod(5);
    w.pods.put(pod);
    w.pods.annotate({ ...pod, ...wrong });
    const err = error(await w.cni('ADD', { ...pod, ...wrong }, 'a'));
    assert.equal(err.code, 120, field);
    assert.match(err.details ?? '', new RegExp(`annotation says ${field} `), field);
    assert.deepEqual(w.ctx.ledger.bindings(), [], field);
  }
});

for (const mode of ['strict', 'standard'] as EnforcingMode[]) {
  test(`${mode}: a branch claim on a regular pod's address is refused, and the regular pod keeps its routes and rules`, async () => {
    // The regular pod's address lies in the branch ENIs' subnet, so that the claim is well-formed.
    const w = await branchWorld(mode, undefined, { addresses: listPool(['10.0.8.50']) });
    const regular = branchPod(20); // the API does not know it: regular networking
    assert.equal((await w.cni('ADD', regular, 'reg')).exitCode, 0);
    const att = w.ctx.ledger.list()[0]!;
    const ip = att.resources.find((r) => r.kind === 'vpcAddress')?.ip;
    assert.ok(ip);
    const before = JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules });
    const attacker = branchPod(21, 21, ip);
    w.pods.put(attacker); // even with EC2 agreeing: the address is the regular pod's
    const err = error(await w.cni('ADD', attacker, 'evil'));
    assert.equal(err.code, 121);
    assert.match(err.msg, new RegExp(`address ${ip.replace(/\./g, '\\.')} belongs to pod default/sg-20`));
    assert.equal(JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules }), before);
    assert.equal((await w.cni('DEL', attacker, 'evil')).exitCode, 0);
    assert.equal(JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules }), before);
    assert.equal(w.ctx.counters.rejectedAnnotations().regularAddress, 1);
  });
}

test('a legitimate VLAN reuse after the first pod left the API supersedes its binding, after a fresh EC2 read', async () => {
  const w = await branchWorld();
  const first = await victimOn(w);
  w.pods.delete(first);
  w.pods.ec2.disassociate(first.eniId);
  const next = { ...branchPod(2, first.vlanId), ip: first.ip };
  w.pods.put(next);
  w.pods.ec2.asked.length = 0;
  assert.equal((await w.cni('ADD', next, 'n1')).exitCode, 0);
  assert.equal(w.ctx.kernel.link(devOf(first)), undefined);
  assert.deepEqual(await w.holderProblems(next), []);
  assert.equal(w.ctx.counters.get('supersededBindings'), 1);
  assert.ok(
    w.pods.ec2.asked.some((a) => a.eniId === next.eniId && a.fresh),
    'the supersede rested on a fresh EC2 read',
  );
});

test('a pod re-annotated by the controller with another branch ENI frees its old binding', async () => {
  const w = await branchWorld();
  const pod = await victimOn(w);
  const moved: BranchPod = { ...pod, eniId: 'eni-00000000000000c1', mac: '0a:00:00:00:c0:01' };
  w.pods.ec2.disassociate(pod.eniId);
  w.pods.put(moved);
  assert.equal((await w.cni('ADD', moved, 'again')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(moved), []);
  assert.equal(w.ctx.counters.get('supersededBindings'), 1);
});

test("while the API cannot be read, another pod's VLAN ID is not taken (code 11)", async () => {
  const w = await branchWorld();
  const victim = await victimOn(w);
  w.pods.delete(victim);
  const next = branchPod(2, victim.vlanId);
  w.pods.put(next);
  w.pods.failReads = true;
  const err = error(await w.cni('ADD', next, 'n1'));
  assert.equal(err.code, 11);
  assert.match(err.msg, /the Kubernetes API cannot say whether it still is/);
  assert.ok(w.ctx.kernel.link(devOf(victim)), "the victim's device stays");
  assert.equal(w.ctx.counters.rejectedAnnotations().apiUnreachable, 1);
});

test('when the API says the other pod is gone but EC2 still shows its VLAN on its own ENI, nothing is taken', async () => {
  const w = await branchWorld();
  const victim = await victimOn(w);
  w.pods.delete(victim); // the API says gone; EC2 still associates the VLAN with the victim's ENI
  const forged = { ...branchPod(2, victim.vlanId), eniId: 'eni-00000000000000d2' };
  w.pods.annotate(forged);
  const err = error(await w.cni('ADD', forged, 'f'));
  assert.equal(err.code, 11);
  assert.ok(w.ctx.kernel.link(devOf(victim)));
});

test('no agent view of EC2 means no annotation is trusted', async () => {
  const w = await branchWorld();
  delete (w.ctx as { trunkFacts?: unknown }).trunkFacts;
  const pod = branchPod(1);
  w.pods.put(pod);
  const err = error(await w.cni('ADD', pod, 'a'));
  assert.equal(err.code, 11);
  assert.match(err.msg, /cannot read EC2's trunk associations/);
});

test("below the claim check: a binding whose plan names a regular pod's route and rules never records, replaces or removes them", async () => {
  const w = await branchWorld('standard', undefined, { addresses: listPool(['10.0.8.50']) });
  const regular = branchPod(30);
  assert.equal((await w.cni('ADD', regular, 'reg')).exitCode, 0);
  const kernelBefore = JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules });
  // As if a claim on 10.0.8.50 had got through: the binding is recorded and settled directly.
  const { key } = admitBinding(
    w.ctx.ledger,
    {
      pod: { namespace: 'default', name: 'intruder', uid: 'uid-intruder' },
      eniId: 'eni-00000000000000e1',
      mac: '0a:00:00:00:e1:01',
      ip: '10.0.8.50',
      vlanId: 31,
      subnetCidr: '10.0.8.0/24',
      gateway: '10.0.8.1',
      trunkDev: 'eth2',
      mode: 'standard',
      driver: 'macvlan',
      mtu: 9001,
      now: Date.now(),
    },
    [],
  );
  const member = { network: 'vpcnet', containerId: 'intr', ifName: 'eth0' };
  const own = planBranchAttachment({ key: member, vethPrefix: 'vpc', ip: '10.0.8.50', mtu: 9001 });
  await w.ctx.dataplane.create('/var/run/netns/intr', own);
  w.ctx.ledger.put({
    key: member,
    pod: { namespace: 'default', name: 'intruder', uid: 'uid-intruder' },
    netns: '/var/run/netns/intr',
    createdAt: Date.now(),
    resources: own,
    branch: key,
  });
  await w.ctx.ledger.commit();
  await settleBinding(w.ctx, key, member);
  assert.ok(w.ctx.ledger.binding(key)?.holder, 'the binding is held');
  const recorded = w.ctx.ledger.binding(key)?.resources ?? [];
  const regularIds = new Set(w.ctx.ledger.list()[0]!.resources.map(identityOf));
  assert.deepEqual(
    recorded.filter((r) => regularIds.has(identityOf(r))),
    [],
    "the binding recorded the regular pod's resources",
  );
  // Its teardown leaves the regular pod's routes and rules as they were.
  w.ctx.ledger.putBinding({ ...w.ctx.ledger.binding(key)!, supersededBy: 'x/y' });
  await settleBinding(w.ctx, key);
  assert.equal(JSON.stringify({ r: w.ctx.kernel.ns().routes, u: w.ctx.kernel.ns().rules }), kernelBefore);
});
