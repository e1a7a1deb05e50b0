// Pods with their own security groups, through the agent's CNI handler on the fake kernel: the
// stale-DEL incident and its family, one sequence per test, then a property over random orders.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { branchDeviceName } from '../../plan/branch-plan.ts';
import { branchPod, branchWorld, TRUNK } from './testing/branch-world.ts';

const devOf = (p: ReturnType<typeof branchPod>) => branchDeviceName({ podUid: p.uid, eniId: p.eniId });

test('the seed sequence: a stale DEL of a replaced sandbox keeps the new sandbox on its branch ENI', async () => {
  const w = await branchWorld();
  const pod = branchPod(1);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'a279')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
  const device = w.ctx.kernel.link(devOf(pod));
  assert.equal(device?.parent, TRUNK.dev);
  assert.equal(device?.mac, pod.mac);
  w.ctx.kernel.ops.length = 0;
  assert.equal((await w.cni('ADD', pod, '30c8')).exitCode, 0);
  assert.ok(
    !w.ctx.kernel.ops.some(
      (o) => o.op.op === 'trunkDeviceAdd' || (o.op.op === 'linkDel' && o.op.dev === devOf(pod)),
    ),
    'the ADD took the device over in place',
  );
  assert.equal(w.ctx.kernel.link(devOf(pod)), device, 'the very same device');
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, '30c8');
  // The old sandbox's namespace is gone; its DEL comes late with CNI_NETNS="".
  w.ctx.kernel.deleteNetns('/var/run/netns/a279');
  assert.equal((await w.cni('DEL', pod, 'a279', '')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.equal(w.ctx.counters.get('preventedTeardowns'), 1);
  assert.deepEqual(await w.orphans(), []);
  // The last sandbox's DEL takes everything: nothing of vpcnet is left on the node.
  assert.equal((await w.cni('DEL', pod, '30c8')).exitCode, 0);
  assert.equal(w.ctx.kernel.link(devOf(pod)), undefined);
  assert.deepEqual(w.ctx.kernel.podResidue(), []);
  assert.deepEqual(w.ctx.kernel.ns().rules, []);
  assert.deepEqual(w.ctx.kernel.ns().routes, []);
  assert.deepEqual(w.ctx.ledger.bindings(), []);
});

test('DEL of the old sandbox while its namespace still exists removes only its own veth', async () => {
  const w = await branchWorld();
  const pod = branchPod(2);
  w.pods.put(pod);
  await w.cni('ADD', pod, 'old');
  await w.cni('ADD', pod, 'new');
  assert.equal((await w.cni('DEL', pod, 'old')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.equal(w.ctx.kernel.veths().length, 1);
});

test('when the holder goes first, the holding passes back to the sandbox still there', async () => {
  const w = await branchWorld('standard');
  const pod = branchPod(3);
  w.pods.put(pod);
  await w.cni('ADD', pod, 'first');
  await w.cni('ADD', pod, 'second');
  assert.equal((await w.cni('DEL', pod, 'second')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'first');
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.ok(w.ctx.kernel.link(devOf(pod)), 'the device stays while a sandbox needs it');
});

test('when the holder goes and two sandboxes remain, the newer of them takes the holding', async () => {
  const w = await branchWorld();
  const pod = branchPod(3);
  w.pods.put(pod);
  for (const sandbox of ['one', 'two', 'three']) assert.equal((await w.cni('ADD', pod, sandbox)).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'three');
  assert.equal((await w.cni('DEL', pod, 'three')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'two', 'the newest remaining sandbox');
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.equal((await w.cni('DEL', pod, 'two')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'one');
  assert.deepEqual(await w.holderProblems(pod), []);
});

test('a repeated ADD of a sandbox fails (130), and a second interface of it is refused: the branch ENI stays with eth0', async () => {
  const w = await branchWorld();
  const pod = branchPod(5);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'only')).exitCode, 0);
  assert.equal(JSON.parse((await w.cni('ADD', pod, 'only')).stdout).code, 130);
  const second = await w.cni('ADD', pod, 'only', undefined, 'eth1');
  assert.notEqual(second.exitCode, 0);
  assert.match(JSON.parse(second.stdout).msg, /already has its pod's branch ENI on eth0/);
  assert.deepEqual(await w.holderProblems(pod), []);
  assert.equal(w.ctx.kernel.veths().length, 1, 'nothing was made for eth1');
});

test('standard mode routes the pod through the main table locally and out of its own table', async () => {
  const w = await branchWorld('standard');
  const pod = branchPod(4);
  w.pods.put(pod);
  await w.cni('ADD', pod, 's1');
  const b = w.ctx.ledger.bindings()[0];
  assert.ok(b);
  const rules = w.ctx.kernel
    .ns()
    .rules.map((r) => `${r.priority} ${r.from ?? '-'} ${r.to ?? '-'} ${r.iif ?? '-'} ${r.table}`);
  assert.deepEqual(rules.sort(), [`1536 ${pod.ip}/32 - - ${b.table}`, `512 - ${pod.ip}/32 - 254`]);
  assert.equal(w.ctx.kernel.hostRoute(pod.ip), w.ctx.kernel.veths()[0]);
  assert.deepEqual(w.ctx.kernel.snatElements(), [], 'a branch ENI pod is never SNATed by the node');
});

test('strict mode sends everything of the pod through its table: iif rules for the device and the holder veth', async () => {
  const w = await branchWorld('strict');
  const pod = branchPod(5);
  w.pods.put(pod);
  await w.cni('ADD', pod, 's1');
  const b = w.ctx.ledger.bindings()[0];
  assert.ok(b);
  const veth = w.ctx.kernel.veths()[0];
  const rules = w.ctx.kernel.ns().rules.map((r) => `${r.priority} ${r.iif} ${r.table}`);
  assert.deepEqual(rules.sort(), [`10 ${devOf(pod)} ${b.table}`, `10 ${veth} ${b.table}`].sort());
  assert.equal(
    w.ctx.kernel.hostRoute(pod.ip),
    undefined,
    'no main-table route: node traffic goes through the VPC',
  );
  const table = w.ctx.kernel
    .ns()
    .routes.filter((r) => r.table === b.table)
    .map((r) => `${r.dst} ${r.via ?? '-'} ${r.dev}`);
  assert.deepEqual(
    table.sort(),
    [`${pod.ip}/32 - ${veth}`, `10.0.8.1/32 - ${devOf(pod)}`, `default 10.0.8.1 ${devOf(pod)}`].sort(),
  );
});

test('VLAN reuse: a late DEL of a deleted pod never touches the device of the pod that now has its VLAN ID', async () => {
  const w = await branchWorld();
  const x = branchPod(6, 1);
  const y = { ...branchPod(7, 1), ip: x.ip }; // the controller reused both the VLAN ID and the address
  w.pods.put(x);
  await w.cni('ADD', x, 'x1');
  w.pods.delete(x);
  w.pods.put(y);
  assert.equal((await w.cni('ADD', y, 'y1')).exitCode, 0);
  assert.equal(
    w.ctx.kernel.link(devOf(x)),
    undefined,
    "X's device went: its VLAN belongs to Y's branch ENI now",
  );
  assert.ok(w.ctx.kernel.link(devOf(y)));
  assert.equal(w.ctx.counters.get('supersededBindings'), 1);
  assert.equal((await w.cni('DEL', x, 'x1')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(y), []);
  assert.equal(w.ctx.counters.get('preventedTeardowns'), 1);
  assert.deepEqual(
    w.ctx.ledger.bindings().map((b) => b.key.podUid),
    [y.uid],
  );
  assert.deepEqual(await w.orphans(), []);
});

test('a branch device deleted by hand fails CHECK until the holder is repaired; CHECK of the old sandbox fails', async () => {
  const w = await branchWorld();
  const pod = branchPod(8);
  w.pods.put(pod);
  await w.cni('ADD', pod, 'old');
  await w.cni('ADD', pod, 'new');
  assert.equal((await w.cni('CHECK', pod, 'new')).exitCode, 0);
  const old = await w.cni('CHECK', pod, 'old');
  assert.equal(old.exitCode, 1);
  assert.match(old.stdout, /another sandbox of the pod \(container new\) holds its branch ENI/);
  w.ctx.kernel.deleteLink(devOf(pod));
  const check = await w.cni('CHECK', pod, 'new');
  assert.match(check.stdout, /"code":110/);
  assert.match(check.stdout, new RegExp(`branch device ${devOf(pod)}`));
  const pass = await w.reconcile();
  assert.equal(pass.bindings.length, 1);
  assert.ok(pass.bindings[0]?.fixed.some((p) => p.includes(devOf(pod))));
  assert.equal((await w.cni('CHECK', pod, 'new')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
});

test('ADD waits (code 11) for the trunk and for the controller’s annotation, and names a bad field (code 120)', async () => {
  const w = await branchWorld();
  const pod = branchPod(9);
  w.pods.put(pod, false);
  const unannotated = await w.cni('ADD', pod, 'a');
  assert.match(unannotated.stdout, /"code":11/);
  assert.match(unannotated.stdout, /has no vpc\.amazonaws\.com\/pod-eni annotation yet/);
  w.pods.put({ ...pod, vlanId: 5000 });
  const bad = await w.cni('ADD', pod, 'a');
  assert.match(bad.stdout, /"code":120/);
  assert.match(bad.stdout, /vlanId/);
  assert.deepEqual(w.ctx.ledger.list(), [], 'a refused ADD leaves no record');
  assert.deepEqual(w.ctx.kernel.podResidue(), []);
  const noTrunk = await branchWorld('strict', () => undefined);
  noTrunk.pods.put(pod);
  const waiting = await noTrunk.cni('ADD', pod, 'a');
  assert.match(waiting.stdout, /"code":11/);
  assert.match(waiting.stdout, /no trunk ENI is attached and configured/);
  assert.deepEqual(noTrunk.ctx.kernel.podResidue(), []);
});

test('property: whatever the order of ADDs, DELs and vanished namespaces, the newest live sandbox of each pod keeps its network and nothing is left unowned', async () => {
  const opArb = fc.oneof(
    fc.record({
      op: fc.constant('add' as const),
      pod: fc.integer({ min: 1, max: 3 }),
      sandbox: fc.integer({ min: 0, max: 3 }),
    }),
    fc.record({
      op: fc.constant('del' as const),
      pod: fc.integer({ min: 1, max: 3 }),
      sandbox: fc.integer({ min: 0, max: 3 }),
    }),
    fc.record({
      op: fc.constant('gone' as const),
      pod: fc.integer({ min: 1, max: 3 }),
      sandbox: fc.integer({ min: 0, max: 3 }),
    }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('strict' as const, 'standard' as const),
      // Long enough that a pod often has three or more sandboxes when its holder goes.
      fc.array(opArb, { minLength: 10, maxLength: 40 }),
      async (mode, ops) => {
        const w = await branchWorld(mode);
        const pods = [1, 2, 3].map((n) => branchPod(n));
        for (const p of pods) w.pods.put(p);
        /** Per pod: sandboxes added and not deleted, newest last; and those whose namespace is gone. */
        const live = new Map<number, string[]>();
        const gone = new Set<string>();
        for (const o of ops) {
          const pod = pods[o.pod - 1]!;
          const sandbox = `p${o.pod}s${o.sandbox}`;
          const list = live.get(o.pod) ?? [];
          if (o.op === 'add') {
            if (gone.has(sandbox)) continue; // a runtime does not ADD into a namespace it deleted
            const out = await w.cni('ADD', pod, sandbox);
            if (list.includes(sandbox)) {
              // A repeated ADD of a live sandbox fails (CNI 1.0) and changes nothing.
              assert.equal(JSON.parse(out.stdout).code, 130, out.stdout);
            } else {
              assert.equal(out.exitCode, 0, out.stdout);
              live.set(o.pod, [...list, sandbox]);
            }
          } else if (o.op === 'del') {
            const out = await w.cni('DEL', pod, sandbox, gone.has(sandbox) ? '' : undefined);
            assert.equal(out.exitCode, 0, out.stdout);
            live.set(
              o.pod,
              list.filter((s) => s !== sandbox),
            );
          } else {
            w.ctx.kernel.deleteNetns(`/var/run/netns/${sandbox}`);
            gone.add(sandbox);
            // The reconcile loop notices (within VPCNET_RECONCILE_SECONDS) and hands the holding on.
            const pass = await w.reconcile();
            assert.deepEqual(pass.failures, []);
          }
          // The newest sandbox whose namespace is there holds its pod's branch ENI, and its network is whole.
          for (const [n, sandboxes] of live) {
            const usable = sandboxes.filter((s) => !gone.has(s));
            const newest = usable.at(-1);
            if (newest === undefined) continue;
            const b = w.ctx.ledger.bindings().find((x) => x.key.podUid === pods[n - 1]!.uid);
            assert.equal(b?.holder?.containerId, newest, `pod ${n}: holder`);
            assert.deepEqual(await w.holderProblems(pods[n - 1]!), [], `pod ${n}: network of ${newest}`);
          }
          assert.deepEqual(await w.orphans(), [], 'something of vpcnet on the node belongs to no record');
        }
        for (const [n, sandboxes] of live) for (const s of sandboxes) await w.cni('DEL', pods[n - 1]!, s, '');
        assert.deepEqual(w.ctx.kernel.podResidue(), []);
        assert.deepEqual(w.ctx.ledger.bindings(), []);
      },
    ),
    { numRuns: 200 },
  );
});

test('a sandbox whose namespace is gone never takes the holding: the pass gives it to the live sandbox, whichever is newer', async () => {
  const w = await branchWorld();
  const pod = branchPod(12);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'live')).exitCode, 0);
  assert.equal((await w.cni('ADD', pod, 'newer')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'newer');
  // The newer sandbox's namespace goes (its veth with it) before its DEL comes.
  w.ctx.kernel.deleteNetns('/var/run/netns/newer');
  await w.reconcile();
  assert.equal(
    w.ctx.ledger.bindings()[0]?.holder?.containerId,
    'live',
    'the holding went to the sandbox with a veth',
  );
  assert.deepEqual(await w.holderProblems(pod), []);
  // The late DEL of the gone sandbox leaves the live one whole.
  assert.equal((await w.cni('DEL', pod, 'newer', '')).exitCode, 0);
  assert.deepEqual(await w.holderProblems(pod), []);
});

test('of two sandboxes created in the same millisecond, the one added last takes the holding', async () => {
  const frozen = 1_767_312_000_000;
  const w = await branchWorld('strict', undefined, { now: () => frozen });
  const pod = branchPod(13);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'first')).exitCode, 0);
  assert.equal((await w.cni('ADD', pod, 'second')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'second');
  // The holder goes; of the two others, both created "at once", the later one takes it.
  assert.equal((await w.cni('ADD', pod, 'third')).exitCode, 0);
  assert.equal((await w.cni('DEL', pod, 'third')).exitCode, 0);
  assert.equal(w.ctx.ledger.bindings()[0]?.holder?.containerId, 'second');
  assert.deepEqual(await w.holderProblems(pod), []);
});
