// The reconcile loop against the fake kernel: every kind of drift is repaired, every kind of
// orphan is collected, and nothing a live attachment (or the ENI setup) owns is ever touched.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { podLineKey } from '../agent/context.ts';
import type { LogFields, Logger } from '../agent/log.ts';
import { PodSerializer } from '../agent/serializer.ts';
import { MAIN_TABLE, type PodNetworkSpec } from '../dataplane/dataplane.ts';
import { FakeDataplane } from '../dataplane/fake.ts';
import { hostVethMac, hostVethName } from '../dataplane/names.ts';
import type { Attachment, AttachmentKey, OwnedResource } from '../ledger/attachment.ts';
import { Ledger } from '../ledger/ledger.ts';
import { MemoryLedgerStore } from '../ledger/store.ts';
import { intendedSpec } from './intent.ts';
import { Reconciler } from './reconciler.ts';

const ENI_PRIMARY = '10.0.1.10';
const ENI_RULE = { priority: 1536, from: `${ENI_PRIMARY}/32`, table: 2 };

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

async function world() {
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 0 });
  const dp = new FakeDataplane();
  await dp.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  dp.addEniLink('ens6', '02:0e:00:00:00:01');
  await dp.setupEni({
    mac: '02:0e:00:00:00:01',
    deviceNumber: 1,
    primaryIp: ENI_PRIMARY,
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  });
  const serializer = new PodSerializer();
  const logs: LogLine[] = [];
  const reconciler = new Reconciler({
    ledger,
    dataplane: dp,
    serializer,
    log: recordingLogger(logs),
    clock: { now: () => 0 },
    vethPrefix: 'vpc',
    protectedAddresses: () => new Set([ENI_PRIMARY]),
    defaultMtu: 9001,
  });
  let n = 0;
  async function attach(o: AttachOptions = {}): Promise<Attachment> {
    n++;
    const key: AttachmentKey = { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' };
    const ip = o.ip ?? `10.0.1.${20 + n}`;
    const spec: PodNetworkSpec = {
      netnsPath: `/var/run/netns/pod-${n}`,
      ifName: 'eth0',
      hostVeth: hostVethName(key, o.vethPrefix ?? 'vpc'),
      hostMac: hostVethMac(key),
      ip,
      mtu: 9001,
      routeTable: o.routeTable ?? 2,
      snat: o.snat ?? true,
    };
    const done = await dp.addPod(spec);
    const att: Attachment = {
      key,
      pod: { namespace: 'default', name: `web-${n}`, uid: `uid-${n}` },
      netns: spec.netnsPath,
      ip,
      eniId: 'eni-1',
      routeTable: spec.routeTable,
      hostVeth: spec.hostVeth,
      mtu: 9001,
      createdAt: 0,
      ...(o.phase ? { phase: o.phase } : {}),
      resources: [{ kind: 'address', ip, eniId: 'eni-1' }, ...done.resources],
    };
    if (!o.unrecorded) ledger.put(att);
    return att;
  }
  const spec = (att: Attachment) => intendedSpec(att, 9001);
  const ops = () => dp.calls.map((c) => c.op);
  return { ledger, dp, serializer, logs, reconciler, attach, spec, ops };
}

/** A resource as a comparable string (key order does not matter). */
function resourceKey(r: object): string {
  return JSON.stringify(Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b))));
}

function kernelSet(dp: FakeDataplane): string[] {
  return dp.resources().map(resourceKey).sort();
}

const kernelOf = (att: Attachment) => att.resources.filter((r) => r.kind !== 'address');

test('a pass over healthy attachments changes nothing and reports nothing', async () => {
  const w = await world();
  await w.attach();
  await w.attach({ routeTable: MAIN_TABLE, snat: false });
  const before = kernelSet(w.dp);
  w.dp.calls.length = 0;
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired, []);
  assert.deepEqual(report.collected, []);
  assert.deepEqual(report.failures, []);
  assert.deepEqual(kernelSet(w.dp), before);
  assert.deepEqual(
    w.ops().filter((op) => op !== 'observeNode' && op !== 'observePodSide'),
    [],
    'only reads happened',
  );
});

test('each missing host-side piece is restored in place, without rebuilding the pod network', async () => {
  const cases: {
    name: string;
    drift: (w: Awaited<ReturnType<typeof world>>, a: Attachment) => void;
    fixed: (a: Attachment) => string[];
  }[] = [
    {
      name: 'host route',
      drift: (w, a) => w.dp.deleteHostRoute(a.ip),
      fixed: (a) => [`host route to ${a.ip} dev ${a.hostVeth} missing`],
    },
    {
      name: 'to-rule',
      drift: (w, a) => w.dp.deleteRule({ priority: 512, to: `${a.ip}/32`, table: MAIN_TABLE }),
      fixed: (a) => [`rule to ${a.ip} lookup main missing`],
    },
    {
      name: 'from-rule',
      drift: (w, a) => w.dp.deleteRule({ priority: 1536, from: `${a.ip}/32`, table: 2 }),
      fixed: (a) => [`rule from ${a.ip} lookup 2 missing`],
    },
    {
      name: 'SNAT element',
      drift: (w, a) => w.dp.deleteSnatElement(a.ip),
      fixed: (a) => [`snat element ${a.ip} missing`],
    },
    {
      name: 'host veth down (the kernel drops its route)',
      drift: (w, a) => w.dp.setLinkDown(a.hostVeth),
      fixed: (a) => [`host veth ${a.hostVeth} down`, `host route to ${a.ip} dev ${a.hostVeth} missing`],
    },
  ];
  for (const c of cases) {
    const w = await world();
    const att = await w.attach();
    const other = await w.attach();
    const podMac = w.dp.podInterface(att.netns, 'eth0')?.mac;
    const healthy = kernelSet(w.dp);
    c.drift(w, att);
    assert.notDeepEqual(await w.dp.inspectPod(w.spec(att)), [], c.name);
    const report = await w.reconciler.runOnce();
    assert.deepEqual(
      report.repaired,
      [{ key: att.key, hostVeth: att.hostVeth, rebuilt: false, fixed: c.fixed(att) }],
      c.name,
    );
    assert.deepEqual(await w.dp.inspectPod(w.spec(att)), [], c.name);
    assert.deepEqual(await w.dp.inspectPod(w.spec(other)), [], c.name);
    assert.deepEqual(kernelSet(w.dp), healthy, `${c.name}: the kernel is back to the intended state`);
    assert.equal(w.dp.podInterface(att.netns, 'eth0')?.mac, podMac, `${c.name}: same pod interface`);
    assert.ok(!w.ops().includes('removeResources'), c.name);
    const log = w.logs.find((l) => l.msg === 'reconcile: repaired drift');
    assert.deepEqual(log?.fields?.key, att.key, `${c.name}: the repair is logged with the attachment key`);
  }
});

test('missing pod-side pieces (address, routes, neighbour) are restored inside the pod namespace', async () => {
  const w = await world();
  const att = await w.attach();
  const podMac = w.dp.podInterface(att.netns, 'eth0')?.mac;
  // Removing the only address also flushes the routes and the neighbour, as in the kernel.
  w.dp.deletePodAddress(att.netns, 'eth0', att.ip);
  const report = await w.reconciler.runOnce();
  assert.equal(report.repaired.length, 1);
  assert.equal(report.repaired[0]?.rebuilt, false);
  assert.deepEqual(report.repaired[0]?.fixed, [
    `address ${att.ip}/32 missing on eth0`,
    'route to 169.254.1.1 dev eth0 missing',
    'default route via 169.254.1.1 missing',
    'neighbour 169.254.1.1 missing',
  ]);
  assert.deepEqual(await w.dp.inspectPod(w.spec(att)), []);
  assert.equal(w.dp.podInterface(att.netns, 'eth0')?.mac, podMac);
  assert.deepEqual(w.dp.podInterface(att.netns, 'eth0')?.neighbour, {
    mac: hostVethMac(att.key),
    permanent: true,
  });
});

test('a deleted host veth makes the pass rebuild the pod network with the same address, touching no other pod', async () => {
  const w = await world();
  const att = await w.attach();
  const other = await w.attach();
  const otherMac = w.dp.podInterface(other.netns, 'eth0')?.mac;
  const healthy = kernelSet(w.dp);
  w.dp.deleteLink(att.hostVeth);
  const report = await w.reconciler.runOnce();
  assert.equal(report.repaired.length, 1);
  assert.equal(report.repaired[0]?.rebuilt, true);
  assert.deepEqual(report.repaired[0]?.key, att.key);
  assert.deepEqual(await w.dp.inspectPod(w.spec(att)), []);
  assert.ok(w.dp.podInterface(att.netns, 'eth0')?.addresses.has(att.ip), 'same address');
  assert.deepEqual(kernelSet(w.dp), healthy);
  assert.deepEqual(w.ledger.get(att.key)?.resources, att.resources, 'the record still lists what it owns');
  assert.equal(w.dp.podInterface(other.netns, 'eth0')?.mac, otherMac, 'the other pod was not rebuilt');
  // Ownership: what was removed before the rebuild is exactly this attachment's own.
  const removed = w.dp.calls.find((c) => c.op === 'removeResources')?.arg;
  assert.deepEqual(removed, kernelOf(att));
  assert.ok(w.logs.some((l) => l.msg === 'reconcile: rebuilt pod network'));
});

test('a vanished pod netns is left to the runtime DEL: nothing is rebuilt or removed, and it is logged once', async () => {
  const w = await world();
  const att = await w.attach();
  w.dp.deleteNetns(att.netns);
  const left = kernelSet(w.dp);
  w.dp.calls.length = 0;
  for (let i = 0; i < 2; i++) {
    const report = await w.reconciler.runOnce();
    assert.deepEqual(report.netnsGone, [att.key]);
    assert.deepEqual(report.repaired, []);
    assert.deepEqual(report.collected, []);
  }
  assert.deepEqual(kernelSet(w.dp), left, "the attachment's rules and SNAT element stay for its DEL");
  assert.ok(!w.ops().some((op) => op === 'addPod' || op === 'removeResources' || op.startsWith('repair')));
  assert.equal(w.logs.filter((l) => l.msg.includes('pod netns gone')).length, 1);
});

test('an attachment whose ADD is still in phase adding is neither repaired nor collected', async () => {
  const w = await world();
  const att = await w.attach({ phase: 'adding' });
  w.dp.deleteHostRoute(att.ip);
  const left = kernelSet(w.dp);
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired, []);
  assert.deepEqual(report.collected, []);
  assert.deepEqual(kernelSet(w.dp), left);
});

test('GC collects orphaned host veths, pod rules and SNAT elements, and nothing else', async () => {
  const w = await world();
  const live = await w.attach();
  const orphan = await w.attach({ unrecorded: true });
  // Not ours to collect: a veth with another prefix (its rules and SNAT element name an address
  // nobody holds, so those go), a rule someone else made at our priority (extra selector), a rule
  // at another priority, the ENI's own rule.
  const foreignVeth = await w.attach({ unrecorded: true, vethPrefix: 'xyz', ip: '10.0.9.9', snat: false });
  w.dp.rules.push({ priority: 512, to: '10.0.7.7/32', table: MAIN_TABLE, other: ['iif'] });
  w.dp.rules.push({ priority: 1000, from: '10.0.7.8/32', table: 2 });
  w.dp.rules.push({ priority: 512, to: '10.0.5.5/32', table: MAIN_TABLE });
  w.dp.rules.push({ priority: 1536, from: '10.0.5.6/32', table: 3 });
  w.dp.snatSet?.add('10.0.5.7');

  const report = await w.reconciler.runOnce();
  assert.deepEqual(
    report.collected.map(resourceKey).sort(),
    [
      ...kernelOf(orphan).filter((r) => r.kind !== 'hostRoute'),
      ...kernelOf(foreignVeth).filter((r) => r.kind === 'rule'),
      { kind: 'rule', priority: 512, to: '10.0.5.5/32', table: MAIN_TABLE },
      { kind: 'rule', priority: 1536, from: '10.0.5.6/32', table: 3 },
      { kind: 'snat', ip: '10.0.5.7' },
    ]
      .map(resourceKey)
      .sort(),
  );
  assert.deepEqual(
    kernelSet(w.dp),
    [
      ...kernelOf(live),
      ...kernelOf(foreignVeth).filter((r) => r.kind !== 'rule'),
      ENI_RULE,
      { priority: 512, to: '10.0.7.7/32', table: MAIN_TABLE, other: ['iif'] },
      { priority: 1000, from: '10.0.7.8/32', table: 2 },
    ]
      .map((r) => resourceKey('kind' in r ? r : { kind: 'rule', ...r }))
      .sort(),
  );
  assert.deepEqual(await w.dp.inspectPod(w.spec(live)), []);
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
  assert.ok(w.dp.hasPod(pending.hostVeth));
  assert.deepEqual(await w.dp.inspectPod(w.spec(pending)), []);
});

test('a DEL queued in the pod line before the repair wins: the pass sees the record gone and rebuilds nothing', async () => {
  const w = await world();
  const att = await w.attach();
  w.dp.deleteLink(att.hostVeth);
  w.dp.calls.length = 0;
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const del = w.serializer.run(podLineKey(att.pod, att.key), async () => {
    await gate;
    await w.dp.removeResources(att.resources);
    w.ledger.remove(att.key);
  });
  const pass = w.reconciler.runOnce();
  await new Promise((r) => setTimeout(r, 20));
  assert.ok(!w.ops().includes('addPod'), 'the repair waits in the pod line');
  release();
  await del;
  const report = await pass;
  assert.deepEqual(report.repaired, []);
  assert.equal(w.dp.hasPod(att.hostVeth), false, 'the deleted pod network was not brought back');
  assert.deepEqual(kernelSet(w.dp), [resourceKey({ kind: 'rule', ...ENI_RULE })]);
});

test('start runs passes on the interval until stop', async () => {
  const w = await world();
  const att = await w.attach();
  w.reconciler.start(5);
  w.dp.deleteHostRoute(att.ip);
  const deadline = Date.now() + 2000;
  while ((await w.dp.inspectPod(w.spec(att))).length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.deepEqual(await w.dp.inspectPod(w.spec(att)), []);
  await w.reconciler.stop();
  w.dp.deleteHostRoute(att.ip);
  await new Promise((r) => setTimeout(r, 30));
  assert.notDeepEqual(await w.dp.inspectPod(w.spec(att)), [], 'no pass after stop');
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
        // An ADD at work is not drift: only complete attachments drift here.
        const drift = p.adding ? [] : p.drift;
        for (const d of drift) {
          if (d === 'deleteLink') w.dp.deleteLink(att.hostVeth);
          if (d === 'setLinkDown') w.dp.setLinkDown(att.hostVeth);
          if (d === 'deletePodAddress') w.dp.deletePodAddress(att.netns, 'eth0', att.ip);
          if (d === 'deleteHostRoute') w.dp.deleteHostRoute(att.ip);
          if (d === 'deleteRuleTo') w.dp.deleteRule({ priority: 512, to: `${att.ip}/32`, table: MAIN_TABLE });
          if (d === 'deleteRuleFrom') w.dp.deleteRule({ priority: 1536, from: `${att.ip}/32`, table: 2 });
          if (d === 'deleteSnat') w.dp.deleteSnatElement(att.ip);
          if (d === 'deleteNetns') w.dp.deleteNetns(att.netns);
        }
        atts.push({ att, netnsGone: drift.includes('deleteNetns') });
      }
      for (let i = 0; i < orphans.veths; i++) await w.attach({ unrecorded: true, ip: `10.0.4.${i + 1}` });
      for (const [priority, i] of orphans.rules) {
        const ip = `10.0.3.${i}/32`;
        w.dp.rules.push(
          priority === 512 ? { priority, to: ip, table: MAIN_TABLE } : { priority, from: ip, table: 2 },
        );
      }
      for (const i of orphans.snat) w.dp.snatSet?.add(`10.0.3.${i}`);
      const present = new Set(kernelSet(w.dp));
      const expected: object[] = [{ kind: 'rule', ...ENI_RULE }];
      for (const { att, netnsGone } of atts) {
        // Live and reachable: everything it owns. Namespace gone: what is left waits for its DEL.
        expected.push(...kernelOf(att).filter((r) => !netnsGone || present.has(resourceKey(r))));
      }

      await w.reconciler.runOnce();

      for (const { att, netnsGone } of atts) {
        if (!netnsGone) assert.deepEqual(await w.dp.inspectPod(w.spec(att)), []);
      }
      assert.deepEqual(kernelSet(w.dp), expected.map(resourceKey).sort());
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
  w.dp.deleteHostRoute(att.ip);
  w.dp.failNext('repairHostSide', 'RTNETLINK answers: Operation not permitted');
  const first = await w.reconciler.runOnce();
  assert.equal(first.failures.length, 1);
  assert.deepEqual(first.failures[0]?.key, att.key);
  assert.match(first.failures[0]?.error ?? '', /Operation not permitted/);
  const second = await w.reconciler.runOnce();
  assert.equal(second.repaired.length, 1);
  assert.deepEqual(await w.dp.inspectPod(w.spec(att)), []);
});

test('resources of the record that are no kernel resources (the address) are never handed to removal', async () => {
  const w = await world();
  const att = await w.attach();
  w.dp.deleteLink(att.hostVeth);
  await w.reconciler.runOnce();
  const removed = w.dp.calls
    .filter((c) => c.op === 'removeResources')
    .flatMap((c) => c.arg as OwnedResource[]);
  assert.ok(removed.every((r) => r.kind !== 'address'));
});

test('a pod netns path that now names another namespace is never rebuilt into; the same namespace is', async () => {
  for (const [now, rebuilt] of [
    ['4:2002', false],
    ['4:1001', true],
  ] as const) {
    const w = await world();
    const att = { ...(await w.attach()), netnsId: '4:1001' };
    w.ledger.put(att);
    w.dp.deleteLink(att.hostVeth);
    const reconciler = new Reconciler({
      ledger: w.ledger,
      dataplane: w.dp,
      serializer: w.serializer,
      log: recordingLogger([]),
      clock: { now: () => 0 },
      vethPrefix: 'vpc',
      protectedAddresses: () => new Set([ENI_PRIMARY]),
      defaultMtu: 9001,
      netnsIdentity: async () => now,
    });
    const report = await reconciler.runOnce();
    assert.equal(report.repaired.length, rebuilt ? 1 : 0, `identity ${now}`);
    assert.equal(w.dp.hasPod(att.hostVeth), rebuilt);
    if (!rebuilt) assert.deepEqual(report.netnsGone, [att.key]);
  }
});
