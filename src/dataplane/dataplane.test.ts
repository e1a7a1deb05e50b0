// The dataplane over the fake kernel: the shared scenario table (the same one runs against the
// real kernel in test/kernels/dataplane-scenarios.test.ts), plus what only the fake can show (injected
// failures at any step, exact operation counts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planRegularPod } from '../plan/pod-plan.ts';
import { Dataplane } from './dataplane.ts';
import { DataplaneError, PodNamespaceTooLarge } from './errors.ts';
import type { Kernel } from './kernel.ts';
import { branchScenarios } from './testing/branch-scenarios.ts';
import { fakeHarness } from './testing/fake-harness.ts';
import { plan as scenarioPlan } from './testing/scenario-helpers.ts';
import { scenarios } from './testing/scenarios.ts';
import { kernelWithRun } from './testing/wrapped-kernel.ts';

for (const s of scenarios) {
  test(`fake kernel: ${s.name}`, async () => s.run(await fakeHarness(s.nodeSetUp ?? true, 'vlan')));
}
// The branch scenarios again with the trunk driver of kernels without 802.1q.
for (const s of branchScenarios) {
  test(`fake kernel, macvlan trunk: ${s.name}`, async () =>
    s.run(await fakeHarness(s.nodeSetUp ?? true, 'macvlan')));
}

const plan = () =>
  planRegularPod({
    key: { network: 'vpcnet', containerId: 'c-a', ifName: 'eth0' },
    vethPrefix: 'vpc',
    ip: '10.0.0.5',
    eniId: 'eni-1',
    routeTable: 2,
    mtu: 9001,
    snat: true,
  });

test('a failure injected at any step of a create leaves nothing of that create behind', async () => {
  const steps = ['vethAdd', 'linkUp', 'addrAdd', 'routeAdd', 'neighAdd', 'ruleAdd', 'snatAdd'] as const;
  for (const step of steps) {
    const h = await fakeHarness();
    const netns = await h.pod();
    h.kernel.failNext(step, 'boom');
    await assert.rejects(h.dataplane.create(netns, plan()), (err: unknown) => {
      assert.ok(err instanceof DataplaneError, String(err));
      assert.equal(err.kernelMessage, 'boom');
      return true;
    });
    const node = await h.dataplane.observeNode();
    assert.deepEqual(node.links, [], `no link left after failing at ${step}`);
    assert.deepEqual(node.rules, [], `no rule left after failing at ${step}`);
    assert.deepEqual(node.snatElements, [], `no SNAT element left after failing at ${step}`);
    await h.dataplane.create(netns, plan());
    assert.deepEqual((await h.dataplane.inspect(netns, plan())).findings, [], 'the failure was one-shot');
  }
});

test('a create runs one batch in the pod, one on the node; a remove one on the node and never enters the pod', async () => {
  const h = await fakeHarness();
  const netns = await h.pod();
  await h.dataplane.create(netns, plan());
  assert.deepEqual(
    h.kernel.ops.map((o) => `${o.ns === 'node' ? 'node' : 'pod'} ${o.op.op}`),
    [
      'pod vethAdd',
      'pod linkUp',
      'pod addrAdd',
      'pod routeAdd',
      'pod routeAdd',
      'pod neighAdd',
      'node linkUp',
      'node routeAdd',
      'node ruleAdd',
      'node ruleAdd',
      'node snatAdd',
    ],
  );
  h.kernel.ops.length = 0;
  await h.dataplane.remove(plan());
  assert.deepEqual(
    h.kernel.ops.map((o) => `${o.ns} ${o.op.op}`),
    // The host route goes with the veth: no routeDel of its own.
    ['node ruleDel', 'node ruleDel', 'node snatDel', 'node linkDel'],
  );
});

test('a rollback that cannot undo something says so in the error', async () => {
  const h = await fakeHarness();
  const netns = await h.pod();
  h.kernel.failNext('snatAdd', 'boom');
  h.kernel.failNext('linkDel', 'Operation not permitted');
  await assert.rejects(
    h.dataplane.create(netns, plan()),
    /boom \(rollback incomplete: link del vpc\w+: Operation not permitted\)/,
  );
});

test('a driver that runs sides in turn gets a create as one exchange, pod side first; the fake without it gets two runs', async () => {
  const h = await fakeHarness();
  const netns = await h.pod();
  const exchanges: string[][] = [];
  const inTurn: Kernel = {
    ...kernelWithRun(h.kernel, (ns, ops, mode) => {
      exchanges.push([ns.side]);
      return h.kernel.run(ns, ops, mode);
    }),
    async runInTurn(runs) {
      exchanges.push(runs.map((r) => r.ns.side));
      const results = [];
      for (const r of runs) results.push(await h.kernel.run(r.ns, r.ops, 'stop'));
      return results;
    },
  };
  await new Dataplane(inTurn).create(netns, plan());
  assert.deepEqual(exchanges, [['pod', 'node']]);
  exchanges.length = 0;
  const { runInTurn: _, ...inTurnless } = inTurn;
  await new Dataplane(inTurnless).create(await h.pod(), scenarioPlan('c-b', '10.0.0.6'));
  assert.deepEqual(exchanges, [['pod'], ['node']]);
});

test("a removal deleting the pod's veth leaves the veth's own routes to that deletion, and nothing of the plan stays", async () => {
  const h = await fakeHarness();
  const netns = await h.pod();
  const resources = scenarioPlan('c-a', '10.0.0.5');
  await h.dataplane.create(netns, resources);
  h.kernel.ops.length = 0;
  await h.dataplane.remove(resources);
  const sent = h.kernel.ops.map((o) => o.op.op);
  assert.ok(sent.includes('linkDel') && sent.includes('ruleDel'), sent.join(' '));
  assert.ok(!sent.includes('routeDel'), `no routeDel for a route on the deleted veth: ${sent.join(' ')}`);
  const node = await h.dataplane.observeNode();
  assert.deepEqual(node.links, []);
  assert.deepEqual(node.routes, []);
  assert.deepEqual(node.rules, []);
});

test("inspect reads the pod within its plan's scope, and judges a pod holding too much to read as one whose side cannot be judged", async () => {
  const h = await fakeHarness();
  const netns = await h.pod();
  await h.dataplane.create(netns, plan());
  const scopes: unknown[] = [];
  let refuse: Error | undefined;
  const kernel: Kernel = {
    ...kernelWithRun(h.kernel, (ns, ops, mode) => h.kernel.run(ns, ops, mode)),
    readPod: (path, scope) => {
      scopes.push(scope);
      return refuse === undefined ? h.kernel.readPod(path, scope) : Promise.reject(refuse);
    },
  };
  const dp = new Dataplane(kernel);
  assert.deepEqual(await dp.inspect(netns, plan()), { findings: [] });
  assert.deepEqual(scopes, [{ links: ['eth0'], routes: [{ table: 254, dev: 'eth0' }], rulePriorities: [] }]);

  refuse = new PodNamespaceTooLarge(netns, 'holds more than 10000 routes (table main, dev eth0)');
  h.kernel.deleteSnatElement('10.0.0.5');
  const seen = await dp.inspect(netns, plan());
  assert.equal(seen.podUnreachable, 'it holds more than 10000 routes (table main, dev eth0)');
  assert.deepEqual(
    seen.findings.map((f) => f.problem),
    ['snat element 10.0.0.5 missing'],
    'the node side is still judged',
  );
  await assert.rejects(dp.observePod(netns, plan()), PodNamespaceTooLarge);
  refuse = new DataplaneError('observePod', 'rtnetlink dump', '', 'boom');
  await assert.rejects(dp.inspect(netns, plan()), /boom/);
});
