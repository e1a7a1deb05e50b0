// The reconcile loop against the fake kernel: every kind of drift is repaired, every kind of
// orphan is collected, and nothing a live attachment (or the ENI setup) owns is ever touched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Dataplane } from '../dataplane/dataplane.ts';
import { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import type { LogFields, Logger } from '../infra/log.ts';
import { PeriodicLoop, type Timers } from '../infra/periodic.ts';
import { Ledger } from '../ledger/ledger.ts';
import { MemoryLedgerStore } from '../ledger/testing/memory-store.ts';
import { type Attachment, type AttachmentKey, attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { identityOf, removalSteps } from '../plan/kinds.ts';
import { PodSerializer, podLineKey } from '../plan/pod-line.ts';
import { MAIN_TABLE, planRegularPod } from '../plan/pod-plan.ts';
import type { NodeView } from '../plan/views.ts';
import { Reconciler, type ReconcilerDeps } from './reconciler.ts';

const ENI_PRIMARY = '10.0.1.10';
const ENI_RULE_ID = `rule 1536 ${ENI_PRIMARY}/32 - - 2`;

interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly fields: LogFields | undefined;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (msg: string, fields?: LogFields) => lines.push({ level, msg, fields });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

interface AttachOptions {
  readonly ip?: string;
  readonly routeTable?: number;
  readonly snat?: boolean;
  readonly phase?: 'adding';
  /** Create the kernel state but record nothing (an orphan). */
  readonly unrecorded?: boolean;
  readonly vethPrefix?: string;
}

/** A serializer that says when an operation queues on a pod's line. */
class WatchedSerializer extends PodSerializer {
  readonly queued: string[] = [];
  override run<T>(podKey: string, op: () => Promise<T>): Promise<T> {
    this.queued.push(podKey);
    return super.run(podKey, op);
  }
}

async function world(extra: Partial<ReconcilerDeps> = {}) {
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 0 });
  const kernel = new FakeKernel();
  const dp = new Dataplane(kernel);
  await dp.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  kernel.addLink('ens6', '02:0e:00:00:00:01');
  await dp.setupEni({
    mac: '02:0e:00:00:00:01',
    deviceNumber: 1,
    primaryIp: ENI_PRIMARY,
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  });
  const serializer = new WatchedSerializer();
  const logs: LogLine[] = [];
  const reconciler = new Reconciler({
    ledger,
    dataplane: dp,
    serializer,
    log: recordingLogger(logs),
    clock: { now: () => 0 },
    vethPrefix: 'vpc',
    protectedAddresses: () => new Set([ENI_PRIMARY]),
    ...extra,
  });
  let n = 0;
  async function attach(o: AttachOptions = {}): Promise<Attachment> {
    n++;
    const key: AttachmentKey = { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' };
    const resources = planRegularPod({
      key,
      vethPrefix: o.vethPrefix ?? 'vpc',
      ip: o.ip ?? `10.0.1.${20 + n}`,
      eniId: 'eni-1',
      routeTable: o.routeTable ?? 2,
      mtu: 9001,
      snat: o.snat ?? true,
    });
    const netns = `/var/run/netns/pod-${n}`;
    await dp.create(netns, resources);
    const att: Attachment = {
      key,
      pod: { namespace: 'default', name: `web-${n}`, uid: `uid-${n}` },
      netns,
      createdAt: 0,
      ...(o.phase ? { phase: o.phase } : {}),
      resources,
    };
    if (!o.unrecorded) ledger.put(att);
    return att;
  }
  const problems = async (att: Attachment) => {
    const seen = await dp.inspect(att.netns, att.resources);
    return [...(seen.podUnreachable ? ['pod unreachable'] : []), ...seen.findings.map((f) => f.problem)];
  };
  return { ledger, kernel, dp, serializer, logs, reconciler, attach, problems };
}

type World = Awaited<ReturnType<typeof world>>;

/** The whole fake kernel (node and every pod namespace) as comparable text. */
function kernelState(kernel: FakeKernel): string {
  const spaces = [...kernel.namespaces].map(([name, ns]) => ({
    name,
    links: [...ns.links.values()]
      .map((l) => ({ ...l, addresses: [...l.addresses].sort() }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    routes: ns.routes.map((r) => JSON.stringify(r)).sort(),
    rules: ns.rules.map((r) => JSON.stringify(r)).sort(),
    neighbours: ns.neighbours.map((x) => JSON.stringify(x)).sort(),
  }));
  return JSON.stringify({ spaces, snat: kernel.snatElements() });
}

/** Identities of the node's pod-shaped objects: veths, host routes on them, rules, SNAT elements. */
function nodeIdentities(view: NodeView): string[] {
  const veths = view.links.filter((l) => l.kind === 'veth').map((l) => l.ifname);
  const cidr = (ip: string | undefined, len: number | undefined) =>
    ip === undefined || ip === 'all' ? '-' : `${ip}/${len ?? 32}`;
  return [
    ...veths.map((v) => `veth ${v}`),
    ...view.routes
      .filter((r) => r.table === MAIN_TABLE && veths.includes(r.dev ?? ''))
      .map((r) => `route node ${r.table} ${r.dst} ${r.dev}`),
    ...view.rules.map(
      (r) =>
        `rule ${r.priority} ${cidr(r.src, r.srclen)} ${cidr(r.dst, r.dstlen)} ${r.iif ?? '-'} ${r.table}`,
    ),
    ...(view.snatElements ?? []).map((ip) => `snat ${ip}`),
  ].sort();
}

/** Identities of what an attachment owns on the node. */
const nodeOwned = (att: Attachment) =>
  att.resources
    .filter(
      (r) =>
        r.kind === 'veth' ||
        r.kind === 'rule' ||
        r.kind === 'snat' ||
        (r.kind === 'route' && r.side === 'node'),
    )
    .map(identityOf);

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
  assert.deepEqual(
    removed,
    removalSteps(att.resources)
      .filter((s) => s.side === 'node')
      .map((s) => s.op),
  );
  assert.ok(w.logs.some((l) => l.msg === 'reconcile: rebuilt pod network'));
});

test('a vanished pod netns is left to the runtime DEL: nothing is rebuilt or removed, and it is logged once', async () => {
  const w = await world();
  const att = await w.attach();
  w.kernel.deleteNetns(att.netns);
  const left = kernelState(w.kernel);
  w.kernel.ops.length = 0;
  for (let i = 0; i < 2; i++) {
    const report = await w.reconciler.runOnce();
    assert.deepEqual(report.netnsGone, [att.key]);
    assert.deepEqual(report.repaired, []);
    assert.deepEqual(report.collected, []);
  }
  assert.equal(kernelState(w.kernel), left, "the attachment's rules and SNAT element stay for its DEL");
  assert.deepEqual(w.kernel.ops, []);
  assert.equal(w.logs.filter((l) => l.msg.includes('pod netns gone')).length, 1);
});

test('an attachment whose ADD is still in phase adding is neither repaired nor collected', async () => {
  const w = await world();
  const att = await w.attach({ phase: 'adding' });
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  const left = kernelState(w.kernel);
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired, []);
  assert.deepEqual(report.collected, []);
  assert.equal(kernelState(w.kernel), left);
});

test('GC collects orphaned host veths, pod rules and SNAT elements, and nothing else', async () => {
  const w = await world();
  const live = await w.attach();
  const orphan = await w.attach({ unrecorded: true });
  // Not ours to collect: a veth with another prefix (its rules and SNAT element name an address
  // nobody holds, so those go), a rule someone else made at our priority (extra selector), a rule
  // at another priority, the ENI's own rule.
  const foreignVeth = await w.attach({ unrecorded: true, vethPrefix: 'xyz', ip: '10.0.9.9', snat: false });
  w.kernel.addRule({ priority: 512, to: '10.0.7.7/32', table: MAIN_TABLE, other: ['fwmark'] });
  w.kernel.addRule({ priority: 1000, from: '10.0.7.8/32', table: 2 });
  w.kernel.addRule({ priority: 512, to: '10.0.5.5/32', table: MAIN_TABLE });
  w.kernel.addRule({ priority: 1536, from: '10.0.5.6/32', table: 3 });
  w.kernel.snatSet?.add('10.0.5.7');
  const orphanIp = attachmentIp(orphan);

  const report = await w.reconciler.runOnce();
  assert.deepEqual(
    report.collected.sort(),
    [
      'rule from 10.0.5.6 lookup 3 prio 1536',
      'rule from 10.0.9.9 lookup 2 prio 1536',
      `rule from ${orphanIp} lookup 2 prio 1536`,
      'rule to 10.0.5.5 lookup main prio 512',
      'rule to 10.0.9.9 lookup main prio 512',
      `rule to ${orphanIp} lookup main prio 512`,
      'snat element 10.0.5.7',
      `snat element ${orphanIp}`,
      `veth ${attachmentHostVeth(orphan)}`,
    ].sort(),
  );
  assert.deepEqual(
    nodeIdentities(await w.dp.observeNode()),
    [
      ...nodeOwned(live),
      `veth ${attachmentHostVeth(foreignVeth)}`,
      `route node 254 10.0.9.9 ${attachmentHostVeth(foreignVeth)}`,
      ENI_RULE_ID,
      'rule 512 - 10.0.7.7/32 - 254',
      'rule 1000 10.0.7.8/32 - - 2',
    ].sort(),
  );
  assert.deepEqual(await w.problems(live), []);
  assert.ok(w.logs.some((l) => l.msg === 'reconcile: collected resources no attachment owns'));
});

test('GC decides ownership right before removing: an ADD that recorded meanwhile keeps its resources', async () => {
  const w = await world();
  const pending = await w.attach({ unrecorded: true });
  const observe = w.dp.observeNode.bind(w.dp);
  // The ADD's 'adding' record lands after the pass has read the kernel.
  w.dp.observeNode = async () => {
    const seen = await observe();
    w.ledger.put({ ...pending, phase: 'adding' });
    return seen;
  };
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.collected, []);
  assert.ok(w.kernel.veths().includes(attachmentHostVeth(pending)));
  assert.deepEqual(await w.problems(pending), []);
});

test('a DEL queued in the pod line before the repair wins: the pass sees the record gone and rebuilds nothing', async () => {
  const w = await world();
  const att = await w.attach();
  const line = podLineKey(att.pod, att.key);
  w.kernel.deleteLink(attachmentHostVeth(att));
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const del = w.serializer.run(line, async () => {
    await gate;
    await w.dp.remove(att.resources);
    w.ledger.remove(att.key);
  });
  w.kernel.ops.length = 0;
  const pass = w.reconciler.runOnce();
  // Wait until the pass's repair has queued behind the DEL in the pod's line.
  while (w.serializer.queued.filter((k) => k === line).length < 2) await new Promise((r) => setImmediate(r));
  assert.ok(!w.kernel.ops.some((o) => o.op.op === 'vethAdd'), 'the repair waits in the pod line');
  release();
  await del;
  const report = await pass;
  assert.deepEqual(report.repaired, []);
  assert.equal(
    w.kernel.veths().includes(attachmentHostVeth(att)),
    false,
    'the deleted pod network was not brought back',
  );
  assert.deepEqual(nodeIdentities(await w.dp.observeNode()), [ENI_RULE_ID]);
});

/** Timers a test fires by hand: no wall-clock windows. */
function manualTimers(): Timers & { fire(): void; pending(): number } {
  const queue = new Map<number, () => void>();
  let next = 0;
  return {
    setTimeout(fn) {
      queue.set(++next, fn);
      return next;
    },
    clearTimeout(h) {
      queue.delete(h as number);
    },
    fire() {
      const due = [...queue.values()];
      queue.clear();
      for (const fn of due) fn();
    },
    pending: () => queue.size,
  };
}

test('the loop runs a pass each time its timer fires, and none after stop', async () => {
  const timers = manualTimers();
  const passes: number[] = [];
  const w = await world({
    loop: (pass) =>
      new PeriodicLoop({
        run: async () => {
          passes.push(1);
          await pass();
        },
        intervalMs: 10_000,
        firstAfterMs: 10_000,
        timers,
      }),
  });
  const att = await w.attach();
  w.reconciler.start();
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  assert.equal(timers.pending(), 1, 'the first pass waits for its interval');
  timers.fire();
  while (passes.length < 1 || timers.pending() === 0) await new Promise((r) => setImmediate(r));
  assert.deepEqual(await w.problems(att), []);
  await w.reconciler.stop();
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  timers.fire();
  await new Promise((r) => setImmediate(r));
  assert.equal(passes.length, 1, 'no pass after stop');
  assert.notDeepEqual(await w.problems(att), []);
});

const DRIFTS = [
  'deleteLink',
  'setLinkDown',
  'deletePodAddress',
  'deleteHostRoute',
  'deleteRuleTo',
  'deleteRuleFrom',
  'deleteSnat',
  'deleteNetns',
] as const;

test('property: after one pass the kernel is exactly the intended state of the live attachments, plus what is protected', async () => {
  const attachmentArb = fc.record({
    routeTable: fc.constantFrom(MAIN_TABLE, 2),
    snat: fc.boolean(),
    adding: fc.boolean(),
    drift: fc.subarray([...DRIFTS]),
  });
  const orphanArb = fc.record({
    veths: fc.integer({ min: 0, max: 2 }),
    rules: fc.uniqueArray(fc.tuple(fc.constantFrom(512, 1536), fc.integer({ min: 1, max: 9 })), {
      selector: ([p, i]) => `${p}-${i}`,
      maxLength: 5,
    }),
    snat: fc.uniqueArray(fc.integer({ min: 1, max: 9 }), { maxLength: 4 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(attachmentArb, { maxLength: 6 }), orphanArb, async (plans, orphans) => {
      const w = await world();
      const atts: { att: Attachment; netnsGone: boolean }[] = [];
      for (const p of plans) {
        const att = await w.attach({
          routeTable: p.routeTable,
          snat: p.snat,
          ...(p.adding ? { phase: 'adding' as const } : {}),
        });
        const [ip, veth] = [attachmentIp(att) ?? '', attachmentHostVeth(att)];
        // An ADD at work is not drift: only complete attachments drift here.
        const drift = p.adding ? [] : p.drift;
        for (const d of drift) {
          if (d === 'deleteLink') w.kernel.deleteLink(veth);
          if (d === 'setLinkDown') w.kernel.setLinkDown(veth);
          if (d === 'deletePodAddress') w.kernel.deleteAddress(att.netns, 'eth0', `${ip}/32`);
          if (d === 'deleteHostRoute') w.kernel.deleteRoute('node', `${ip}/32`);
          if (d === 'deleteRuleTo') w.kernel.deleteRule({ priority: 512, to: `${ip}/32`, table: MAIN_TABLE });
          if (d === 'deleteRuleFrom') w.kernel.deleteRule({ priority: 1536, from: `${ip}/32`, table: 2 });
          if (d === 'deleteSnat') w.kernel.deleteSnatElement(ip);
          if (d === 'deleteNetns') w.kernel.deleteNetns(att.netns);
        }
        atts.push({ att, netnsGone: drift.includes('deleteNetns') });
      }
      for (let i = 0; i < orphans.veths; i++) await w.attach({ unrecorded: true, ip: `10.0.4.${i + 1}` });
      for (const [priority, i] of orphans.rules) {
        const ip = `10.0.3.${i}/32`;
        w.kernel.addRule(
          priority === 512 ? { priority, to: ip, table: MAIN_TABLE } : { priority, from: ip, table: 2 },
        );
      }
      for (const i of orphans.snat) w.kernel.snatSet?.add(`10.0.3.${i}`);
      const present = new Set(nodeIdentities(await w.dp.observeNode()));
      const expected = [ENI_RULE_ID];
      for (const { att, netnsGone } of atts) {
        // Live and reachable: everything it owns. Namespace gone: what is left waits for its DEL.
        expected.push(...nodeOwned(att).filter((id) => !netnsGone || present.has(id)));
      }

      await w.reconciler.runOnce();

      for (const { att, netnsGone } of atts) {
        if (!netnsGone) assert.deepEqual(await w.problems(att), []);
      }
      assert.deepEqual(nodeIdentities(await w.dp.observeNode()), expected.sort());
      // Converged: a second pass finds nothing to do.
      const again = await w.reconciler.runOnce();
      assert.deepEqual([again.repaired, again.collected, again.failures], [[], [], []]);
    }),
    { numRuns: 150 },
  );
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
