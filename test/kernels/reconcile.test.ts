// The reconcile loop against the real kernel. Each test builds its own "node" namespace (the
// dataplane runs node-side commands there via hostNetns) with an ENI-like link, and pod namespaces;
// drift and orphans are made by hand with ip/nft inside those namespaces, and all are removed after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { KeyedSerializer } from '../../src/infra/keyed-serializer.ts';
import { silentLogger } from '../../src/infra/log.ts';
import { Ledger } from '../../src/ledger/ledger.ts';
import { MemoryLedgerStore } from '../../src/ledger/testing/memory-store.ts';
import { type Attachment, type AttachmentKey, attachmentHostVeth } from '../../src/plan/attachment.ts';
import { planRegularPod } from '../../src/plan/pod-plan.ts';
import { Reconciler } from '../../src/reconcile/reconciler.ts';
import {
  execIn,
  mustExecIn,
  netnsPath,
  plantEniLink,
  removeNetns,
  withNetnsCleanup,
} from '../netns-fixture.ts';

type Create = (prefix: string) => Promise<string>;
type Json = Record<string, unknown>;

const NODE_LOCAL_IP = '10.99.0.1';
const ENI_PRIMARY = '10.0.1.10';

async function ipJson(ns: string, args: readonly string[]): Promise<Json[]> {
  const r = await mustExecIn(ns, ['ip', '-j', ...args]);
  return JSON.parse(r.stdout || '[]') as Json[];
}

/** Rules as "priority selector table", e.g. "512 to 10.0.0.5 main". */
async function ruleLines(node: string): Promise<string[]> {
  return (await ipJson(node, ['rule', 'show']))
    .filter((r) => r.priority !== 0 && r.priority !== 32766 && r.priority !== 32767)
    .map((r) => {
      const sel = r.dst !== undefined ? `to ${r.dst}` : `from ${r.src}`;
      const extra = r.iif !== undefined ? ` iif ${r.iif}` : '';
      return `${r.priority} ${sel}${extra} ${r.table}`;
    })
    .sort();
}

async function snatElements(node: string): Promise<string[]> {
  const r = await execIn(node, ['nft', '-j', 'list', 'set', 'ip', 'vpcnet', 'snat_pods']);
  if (r.code !== 0) return [];
  const items = (JSON.parse(r.stdout) as { nftables: Json[] }).nftables;
  const set = items.find((i) => i.set !== undefined)?.set as { elem?: string[] } | undefined;
  return (set?.elem ?? []).sort();
}

/** A TCP handshake to ip:9 from ns gets an answer (a connection or a RST): packets went both ways. */
async function reaches(ns: string, ip: string): Promise<boolean> {
  const r = await execIn(ns, ['timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${ip}/9`]);
  return r.code === 0 || /Connection refused/.test(r.stderr);
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** A node namespace with vpcnet's nft table, an ENI link set up on table 2, and a reconciler. */
async function makeNode(create: Create) {
  const node = await create('vpcrec-node-');
  await mustExecIn(node, ['ip', 'addr', 'add', `${NODE_LOCAL_IP}/32`, 'dev', 'lo']);
  const kernel = new IpCliKernel({ hostNetns: netnsPath(node) });
  const dp = new Dataplane(kernel);
  await dp.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.200.0.1' });
  const mac = '02:0e:0e:00:00:01';
  await plantEniLink(node, 'ens6', mac);
  await dp.setupEni({
    mac,
    deviceNumber: 1,
    primaryIp: ENI_PRIMARY,
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  });
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: Date.now });
  const reconciler = new Reconciler({
    ledger,
    dataplane: dp,
    serializer: new KeyedSerializer(),
    log: silentLogger,
    clock: { now: Date.now },
    vethPrefix: 'vpc',
    protectedAddresses: () => new Set([ENI_PRIMARY]),
  });
  let n = 0;
  /** A pod attached as the agent's ADD would: kernel state built, attachment recorded. */
  async function attach(
    ip: string,
    record = true,
  ): Promise<{ pod: string; att: Attachment; hostVeth: string }> {
    n++;
    const pod = await create('vpcrec-pod-');
    const key: AttachmentKey = { network: 'vpcnet', containerId: `c${n}${pod.slice(-6)}`, ifName: 'eth0' };
    const resources = planRegularPod({
      key,
      vethPrefix: 'vpc',
      ip,
      eniId: 'eni-1',
      routeTable: 2,
      mtu: 9001,
      snat: true,
    });
    await dp.create(netnsPath(pod), resources);
    const att: Attachment = {
      key,
      pod: { namespace: 'default', name: pod, uid: pod },
      netns: netnsPath(pod),
      createdAt: Date.now(),
      resources,
    };
    if (record) ledger.put(att);
    return { pod, att, hostVeth: attachmentHostVeth(att) };
  }
  /** What CHECK would report for the attachment. */
  async function problems(att: Attachment): Promise<string[]> {
    const seen = await dp.inspect(att.netns, att.resources);
    return [...(seen.podUnreachable ? ['pod unreachable'] : []), ...seen.findings.map((f) => f.problem)];
  }
  return { node, dp, kernel, ledger, reconciler, attach, problems };
}

test('a host route and to-rule deleted by hand are restored by one pass, and pod and node reach each other again', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, kernel, reconciler, attach, problems } = await makeNode(create);
    const { pod, att, hostVeth } = await attach('10.0.1.21');
    const eth0Before = (await ipJson(pod, ['link', 'show', 'dev', 'eth0']))[0]?.ifindex;
    await mustExecIn(node, ['ip', 'route', 'del', '10.0.1.21/32', 'dev', hostVeth]);
    await mustExecIn(node, ['ip', 'rule', 'del', 'to', '10.0.1.21/32', 'lookup', 'main', 'prio', '512']);
    assert.equal(await reaches(node, '10.0.1.21'), false, 'the drift breaks node -> pod');

    const before = kernel.commandsRun;
    const report = await reconciler.runOnce();
    assert.deepEqual(report.repaired, [
      {
        key: att.key,
        hostVeth,
        rebuilt: false,
        fixed: [
          `host route 10.0.1.21 dev ${hostVeth} missing`,
          'rule to 10.0.1.21 lookup main prio 512 missing',
        ],
      },
    ]);
    // observe node (ip + nft) and pod side, then in the pod's line: read both again (ip + nft + pod)
    // and one ip -batch for the repair; then the node once more (ip + nft), as the repair left it,
    // for the bindings and GC.
    assert.ok(kernel.commandsRun - before <= 9, `the pass ran ${kernel.commandsRun - before} processes`);
    assert.deepEqual(await problems(att), []);
    assert.deepEqual(await ipJson(node, ['route', 'show', 'table', 'main', '10.0.1.21/32']), [
      { dst: '10.0.1.21', dev: hostVeth, scope: 'link', flags: [] },
    ]);
    assert.ok(await reaches(node, '10.0.1.21'), 'node -> pod');
    assert.ok(await reaches(pod, NODE_LOCAL_IP), 'pod -> node');
    assert.equal(
      (await ipJson(pod, ['link', 'show', 'dev', 'eth0']))[0]?.ifindex,
      eth0Before,
      'repaired in place: the pod interface is the same one',
    );
    const again = await reconciler.runOnce();
    assert.deepEqual([again.repaired, again.collected, again.failures], [[], [], []], 'converged');
  });
});

test('pod-side drift (address removed inside the pod) is restored inside the pod namespace', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, reconciler, attach, problems } = await makeNode(create);
    const { pod, att } = await attach('10.0.1.22');
    await mustExecIn(pod, ['ip', 'addr', 'del', '10.0.1.22/32', 'dev', 'eth0']);
    assert.equal(await reaches(pod, NODE_LOCAL_IP), false);
    const report = await reconciler.runOnce();
    assert.equal(report.repaired.length, 1);
    assert.ok(report.repaired[0]?.fixed.includes('address 10.0.1.22/32 missing on eth0'));
    assert.deepEqual(await problems(att), []);
    assert.ok(await reaches(pod, NODE_LOCAL_IP), 'pod -> node');
    assert.ok(await reaches(node, '10.0.1.22'), 'node -> pod');
  });
});

test('a host veth deleted by hand is rebuilt by one pass with the same address', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, ledger, reconciler, attach, problems } = await makeNode(create);
    const { pod, att, hostVeth } = await attach('10.0.1.23');
    const other = await attach('10.0.1.24');
    await mustExecIn(node, ['ip', 'link', 'del', hostVeth]);
    assert.equal(await reaches(pod, NODE_LOCAL_IP), false);

    const report = await reconciler.runOnce();
    assert.equal(report.repaired.length, 1);
    assert.equal(report.repaired[0]?.rebuilt, true);
    assert.deepEqual(report.repaired[0]?.key, att.key);
    assert.deepEqual(await problems(att), []);
    const [eth0] = await ipJson(pod, ['addr', 'show', 'dev', 'eth0']);
    assert.deepEqual(
      ((eth0?.addr_info ?? []) as Json[]).filter((a) => a.family === 'inet').map((a) => a.local),
      ['10.0.1.23'],
    );
    assert.ok(await reaches(pod, NODE_LOCAL_IP), 'pod -> node');
    assert.ok(await reaches(node, '10.0.1.23'), 'node -> pod');
    assert.deepEqual(ledger.get(att.key)?.resources, att.resources);
    assert.deepEqual(await problems(other.att), [], 'the other pod is untouched');
    assert.deepEqual(await snatElements(node), ['10.0.1.23', '10.0.1.24']);
  });
});

test("orphan rules and SNAT elements are collected; the ENI's own rule, live pods' rules and others' rules stay", async () => {
  await withNetnsCleanup(async (create) => {
    const { node, reconciler, attach, problems } = await makeNode(create);
    const { att, hostVeth } = await attach('10.0.1.25');
    const orphan = await attach('10.0.1.26', false);
    await mustExecIn(node, ['ip', 'rule', 'add', 'to', '10.0.3.3/32', 'lookup', 'main', 'prio', '512']);
    await mustExecIn(node, ['ip', 'rule', 'add', 'from', '10.0.3.4/32', 'lookup', '2', 'prio', '1536']);
    await mustExecIn(node, ['nft', 'add', 'element', 'ip', 'vpcnet', 'snat_pods', '{ 10.0.3.5 }']);
    // Not vpcnet's: a rule at our priority with another selector, and one at another priority.
    await mustExecIn(node, [
      'ip',
      'rule',
      'add',
      'iif',
      'lo',
      'to',
      '10.0.3.6/32',
      'lookup',
      'main',
      'prio',
      '512',
    ]);
    await mustExecIn(node, ['ip', 'rule', 'add', 'to', '10.0.3.7/32', 'lookup', 'main', 'prio', '1000']);

    const report = await reconciler.runOnce();
    assert.equal(report.failures.length, 0, JSON.stringify(report.failures));
    assert.deepEqual(await ruleLines(node), [
      '1000 to 10.0.3.7 main',
      '1536 from 10.0.1.10 2',
      '1536 from 10.0.1.25 2',
      '512 to 10.0.1.25 main',
      '512 to 10.0.3.6 iif lo main',
    ]);
    assert.deepEqual(await snatElements(node), ['10.0.1.25']);
    const links = (await ipJson(node, ['link', 'show', 'type', 'veth'])).map((l) => l.ifname);
    assert.ok(!links.includes(orphan.hostVeth), 'the orphan veth was collected');
    assert.ok(links.includes(hostVeth) && links.includes('ens6'), 'the live veth and the ENI stay');
    assert.deepEqual(await problems(att), []);
  });
});

test('a pod whose namespace was deleted is left for its DEL: the pass rebuilds and removes nothing', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, reconciler, attach } = await makeNode(create);
    const { pod, att, hostVeth } = await attach('10.0.1.27');
    await removeNetns(pod);
    assert.ok(
      await eventually(async () => (await execIn(node, ['ip', 'link', 'show', 'dev', hostVeth])).code !== 0),
    );
    const report = await reconciler.runOnce();
    assert.deepEqual(report.netnsGone, [att.key]);
    assert.deepEqual([report.repaired, report.collected], [[], []]);
    assert.deepEqual(await ruleLines(node), [
      '1536 from 10.0.1.10 2',
      '1536 from 10.0.1.27 2',
      '512 to 10.0.1.27 main',
    ]);
    assert.deepEqual(await snatElements(node), ['10.0.1.27']);
  });
});
