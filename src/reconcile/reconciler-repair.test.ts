// A reconcile pass repairs drift of live attachments: each missing piece in place, a whole pod
// network rebuilt with the same address when its host veth is gone, a failed repair retried, and
// never into a namespace path that now names another namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withoutWhatGoesWithItsLink } from '../dataplane/removal-ops.ts';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { removalSteps } from '../plan/kinds.ts';
import { MAIN_TABLE } from '../plan/pod-plan.ts';
import { kernelState } from './testing/comparable-state.ts';
import { type World, world } from './testing/reconcile-world.ts';

test('a pass over healthy attachments changes nothing and reports nothing', async () => {
  const w = await world();
  await w.attach();
  await w.attach({ routeTable: MAIN_TABLE, snat: false });
  const before = kernelState(w.kernel);
  w.kernel.ops.length = 0;
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired, []);
  assert.deepEqual(report.collected, []);
  assert.deepEqual(report.failures, []);
  assert.equal(kernelState(w.kernel), before);
  assert.deepEqual(w.kernel.ops, [], 'only reads happened');
});

test('each missing node-side piece is restored in place, without rebuilding the pod network', async () => {
  const cases: {
    name: string;
    drift: (w: World, ip: string, veth: string) => void;
    fixed: (ip: string, veth: string) => string[];
  }[] = [
    {
      name: 'host route',
      drift: (w, ip) => w.kernel.deleteRoute('node', `${ip}/32`),
      fixed: (ip, veth) => [`host route ${ip} dev ${veth} missing`],
    },
    {
      name: 'to-rule',
      drift: (w, ip) => w.kernel.deleteRule({ priority: 512, to: `${ip}/32`, table: MAIN_TABLE }),
      fixed: (ip) => [`rule to ${ip} lookup main prio 512 missing`],
    },
    {
      name: 'from-rule',
      drift: (w, ip) => w.kernel.deleteRule({ priority: 1536, from: `${ip}/32`, table: 2 }),
      fixed: (ip) => [`rule from ${ip} lookup 2 prio 1536 missing`],
    },
    {
      name: 'SNAT element',
      drift: (w, ip) => w.kernel.deleteSnatElement(ip),
      fixed: (ip) => [`snat element ${ip} missing`],
    },
    {
      name: 'host veth down (the kernel drops its route)',
      drift: (w, _ip, veth) => w.kernel.setLinkDown(veth),
      fixed: (ip, veth) => [`host veth ${veth} down`, `host route ${ip} dev ${veth} missing`],
    },
  ];
  for (const c of cases) {
    const w = await world();
    const att = await w.attach();
    const other = await w.attach();
    const [ip, veth] = [attachmentIp(att) ?? '', attachmentHostVeth(att)];
    const healthy = kernelState(w.kernel);
    c.drift(w, ip, veth);
    assert.notDeepEqual(await w.problems(att), [], c.name);
    w.kernel.ops.length = 0;
    const report = await w.reconciler.runOnce();
    assert.deepEqual(
      report.repaired,
      [{ key: att.key, hostVeth: veth, rebuilt: false, fixed: c.fixed(ip, veth) }],
      c.name,
    );
    assert.deepEqual(await w.problems(att), [], c.name);
    assert.deepEqual(await w.problems(other), [], c.name);
    assert.equal(kernelState(w.kernel), healthy, `${c.name}: the kernel is back to the intended state`);
    assert.ok(
      !w.kernel.ops.some((o) => o.op.op.endsWith('Del') || o.op.op === 'vethAdd'),
      `${c.name}: nothing removed or rebuilt`,
    );
    const log = w.logs.find((l) => l.msg === 'reconcile: repaired drift');
    assert.deepEqual(log?.fields?.key, att.key, `${c.name}: the repair is logged with the attachment key`);
  }
});

test('missing pod-side pieces (address, routes, neighbour) are restored inside the pod namespace', async () => {
  const w = await world();
  const att = await w.attach();
  const ip = attachmentIp(att) ?? '';
  const healthy = kernelState(w.kernel);
  // Removing the only address also flushes the routes and the neighbour, as in the kernel.
  w.kernel.deleteAddress(att.netns, 'eth0', `${ip}/32`);
  w.kernel.ops.length = 0;
  const report = await w.reconciler.runOnce();
  assert.equal(report.repaired.length, 1);
  assert.equal(report.repaired[0]?.rebuilt, false);
  assert.deepEqual(report.repaired[0]?.fixed, [
    `address ${ip}/32 missing on eth0`,
    'route 169.254.1.1 dev eth0 missing',
    'route default via 169.254.1.1 dev eth0 missing',
    'neighbour 169.254.1.1 missing',
  ]);
  assert.deepEqual(await w.problems(att), []);
  assert.equal(kernelState(w.kernel), healthy, 'same pod interface, same neighbour, same everything');
  assert.ok(!w.kernel.ops.some((o) => o.op.op === 'vethAdd' || o.op.op === 'linkDel'), 'repaired in place');
});

test('a deleted host veth makes the pass rebuild the pod network with the same address, touching no other pod', async () => {
  const w = await world();
  const att = await w.attach();
  const other = await w.attach();
  const healthy = kernelState(w.kernel);
  w.kernel.deleteLink(attachmentHostVeth(att));
  w.kernel.ops.length = 0;
  const report = await w.reconciler.runOnce();
  assert.equal(report.repaired.length, 1);
  assert.equal(report.repaired[0]?.rebuilt, true);
  assert.deepEqual(report.repaired[0]?.key, att.key);
  assert.deepEqual(await w.problems(att), []);
  assert.equal(kernelState(w.kernel), healthy, 'same address, same names, the other pod untouched');
  assert.deepEqual(w.ledger.get(att.key)?.resources, att.resources, 'the record still lists what it owns');
  assert.ok(!w.kernel.ops.some((o) => o.ns === other.netns), 'the other pod was not touched');
  // Ownership: what was removed before the rebuild is exactly this attachment's own.
  const removed = w.kernel.ops.filter((o) => o.op.op.endsWith('Del')).map((o) => o.op);
  // (A route on the deleted link goes with it: the dataplane does not ask for it first.)
  assert.deepEqual(
    removed,
    withoutWhatGoesWithItsLink(
      removalSteps(att.resources)
        .filter((s) => s.side === 'node')
        .map((s) => s.op),
    ),
  );
  assert.ok(w.logs.some((l) => l.msg === 'reconcile: rebuilt pod network'));
});

test('a repair that fails is reported with its key and retried by the next pass', async () => {
  const w = await world();
  const att = await w.attach();
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  w.kernel.failNext('routeAdd', 'RTNETLINK answers: Operation not permitted');
  const first = await w.reconciler.runOnce();
  assert.equal(first.failures.length, 1);
  assert.deepEqual(first.failures[0]?.key, att.key);
  assert.match(first.failures[0]?.error ?? '', /Operation not permitted/);
  const second = await w.reconciler.runOnce();
  assert.equal(second.repaired.length, 1);
  assert.deepEqual(await w.problems(att), []);
});

test('a pod netns path that now names another namespace is never rebuilt into; the same namespace is', async () => {
  for (const [now, rebuilt] of [
    ['4:2002', false],
    ['4:1001', true],
  ] as const) {
    const w = await world({ netnsIdentity: async () => now });
    const att = { ...(await w.attach()), netnsId: '4:1001' };
    w.ledger.put(att);
    w.kernel.deleteLink(attachmentHostVeth(att));
    const report = await w.reconciler.runOnce();
    assert.equal(report.repaired.length, rebuilt ? 1 : 0, `identity ${now}`);
    assert.equal(w.kernel.veths().includes(attachmentHostVeth(att)), rebuilt);
    if (!rebuilt) assert.deepEqual(report.netnsGone, [att.key]);
  }
});
