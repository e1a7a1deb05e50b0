// Adopting aws-node's pods in place (issue 24, item 5). A lab node is made the way aws-node leaves
// one when its DaemonSet is taken off the node: its IPAM checkpoint (upstream's vpc-cni-ipam/1
// format), pods behind host veths named `eni` + SHA-1 of "namespace.name", their /32 host routes,
// rules 512 and 1536, its ENI's source rule, its iptables SNAT and connmark chains and its
// `aws-cni` nftables table; no vpcnet ledger. vpcnet then starts on it. Every pod keeps its address
// and keeps answering, aws-node's leftovers go, a new pod never gets an adopted pod's address, and
// the runtime's DEL of an adopted pod removes exactly that pod's network.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { getJson } from '../../src/infra/unix-socket-json.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { readRecords } from '../../src/lab/processes/processes.ts';
import { awsNodeIptables } from '../aws-node-state.ts';
import {
  addPod,
  agentState,
  cni,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  registerPod,
  restartAgent,
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';

const PORT = 7080;
const SERVER = (name: string) =>
  `require('node:http').createServer((q, s) => s.end(${JSON.stringify(name)})).listen(${PORT}, '0.0.0.0', () => console.log('listening'))`;
const CLIENT = `require('node:http').get({ host: process.argv[1], port: ${PORT}, timeout: 5000 }, (r) => { let d = ''; r.on('data', (c) => { d += c; }); r.on('end', () => console.log(d)); }).on('timeout', function () { this.destroy(new Error('timeout')); }).on('error', (e) => { console.error(e.message); process.exit(1); });`;

async function answer(from: string, ip: string): Promise<string | undefined> {
  const r = await runProcess(['ip', 'netns', 'exec', from, process.execPath, '-e', CLIENT, ip]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** aws-node's host veth name for a pod (upstream's GeneratePodHostVethName with prefix "eni"). */
function awsVeth(namespace: string, name: string): string {
  return `eni${createHash('sha1').update(`${namespace}.${name}`).digest('hex').slice(0, 11)}`;
}

interface PoolEniView {
  eniId: string;
  deviceNumber: number;
  primaryIp: string;
  routeTable: number;
  addresses: Record<string, { kind: string }>;
}

/** `ip -n NS <words>`: the words split at spaces (none of them has one). */
function ip(ns: string, words: string): Promise<string> {
  return sh(['ip', '-n', ns, ...words.split(' ')]);
}

/** Runs argv inside the node's namespace. */
function inNode(node: LabNodeDesc, argv: string[], stdin?: string) {
  return runProcess(['ip', 'netns', 'exec', node.netns, ...argv], stdin === undefined ? {} : { stdin });
}

async function mustInNode(node: LabNodeDesc, argv: string[], stdin?: string): Promise<string> {
  const r = await inNode(node, argv, stdin);
  if (r.code !== 0) throw new Error(`${argv.join(' ')} in ${node.netns}: ${r.stderr}`);
  return r.stdout;
}

interface AwsPod {
  pod: TestPod;
  ip: string;
  veth: string;
  table: number;
}

/** A pod wired as aws-node's plugin wires one (pod side and node side). */
async function wireAsAwsNode(node: LabNodeDesc, p: AwsPod): Promise<void> {
  const ns = p.pod.netnsName;
  await ip(node.netns, `link add ${p.veth} type veth peer name eth0 netns ${ns}`);
  await ip(node.netns, `link set ${p.veth} up`);
  const mac = (JSON.parse(await ip(node.netns, `-j link show ${p.veth}`)) as { address: string }[])[0]!
    .address;
  for (const words of [
    'link set lo up',
    'link set eth0 up',
    `addr add ${p.ip}/32 dev eth0`,
    'route add 169.254.1.1 dev eth0 scope link',
    'route add default via 169.254.1.1 dev eth0',
    `neigh add 169.254.1.1 lladdr ${mac} dev eth0 nud permanent`,
  ])
    await ip(ns, words);
  await ip(node.netns, `route add ${p.ip}/32 dev ${p.veth} scope link`);
  await ip(node.netns, `rule add to ${p.ip}/32 table main priority 512`);
  if (p.table !== 254) await ip(node.netns, `rule add from ${p.ip}/32 table ${p.table} priority 1536`);
}

/** aws-node's iptables chains and rules (as its 1.2x versions leave them) and its nftables table. */
async function awsNodeFirewall(node: LabNodeDesc, primaryIp: string): Promise<void> {
  await mustInNode(node, ['iptables-nft-restore', '--noflush'], awsNodeIptables(primaryIp));
  await mustInNode(node, ['nft', 'add', 'table', 'ip', 'aws-cni']);
  await mustInNode(node, ['nft', 'add', 'chain', 'ip', 'aws-cni', 'snat-mark']);
}

async function iptablesSave(node: LabNodeDesc): Promise<string> {
  return `${await mustInNode(node, ['iptables-nft-save', '-t', 'nat'])}${await mustInNode(node, ['iptables-nft-save', '-t', 'mangle'])}`;
}

async function nodeRules(
  node: LabNodeDesc,
): Promise<{ priority: number; src?: string; dst?: string; table: string }[]> {
  return JSON.parse(await sh(['ip', '-n', node.netns, '-j', 'rule', 'show'])) as {
    priority: number;
    src?: string;
    dst?: string;
    table: string;
  }[];
}

async function snatElements(node: LabNodeDesc): Promise<string[]> {
  const out = await mustInNode(node, ['nft', '-j', 'list', 'set', 'ip', 'vpcnet', 'snat_pods']);
  return (
    (JSON.parse(out) as { nftables: { set?: { elem?: string[] } }[] }).nftables.find((i) => i.set)?.set
      ?.elem ?? []
  );
}

interface AdoptionState {
  adoption?: {
    adopted: { pod: string; ip: string; hostVeth: string; key: { network: string; containerId: string } }[];
    notAdopted: { pod?: string; ip?: string; reason: string }[];
    removed: string[];
    problems: string[];
  };
  attachments: { ip: string; hostVeth: string }[];
}

describe('a node aws-node left: vpcnet adopts its pods in place', () => {
  const name = uniqueLabName('ad');
  const servers: ChildProcess[] = [];
  const netns: string[] = [];
  let lab: LabDesc;
  let node: LabNodeDesc;

  before(async () => {
    await labDown(name);
    // Two ENIs' worth of addresses before aws-node's pods are made from them; a reconcile pass every
    // 2 s collects the gone pod's rules without a 10 s wait.
    const env = ['MINIMUM_IP_TARGET=9', 'IP_COOLDOWN_PERIOD=2', 'VPCNET_RECONCILE_SECONDS=2'];
    lab = await labUp(
      name,
      env.flatMap((e) => ['--agent-env', e]),
    );
    node = lab.nodes[0]!;
  });
  after(async () => {
    stopNetnsServers(servers);
    for (const ns of netns) await sh(['ip', 'netns', 'del', ns]).catch(() => undefined);
    await labDown(name);
  });

  test('every pod keeps its address and answers, leftovers go, DEL of an adopted pod cleans exactly it', async () => {
    const host = lab.vpcHosts[0]!;
    const layout = labLayout(name, 1).nodes[0]!;
    const enis = await waitFor(
      'a second ENI with free addresses',
      async () => {
        const pool = (await agentState(node)).pool as unknown as { enis: PoolEniView[] };
        const free = (e: PoolEniView) => Object.entries(e.addresses).filter(([, s]) => s.kind === 'free');
        const primary = pool.enis.find((e) => e.deviceNumber === 0);
        const secondary = pool.enis.find((e) => e.deviceNumber > 0 && free(e).length >= 2);
        return primary && secondary && free(primary).length >= 2 ? { primary, secondary, free } : undefined;
      },
      60_000,
    );
    const [p1, p2] = enis.free(enis.primary).map(([ip]) => ip);
    const [s1, s2] = enis.free(enis.secondary).map(([ip]) => ip);

    // The agent is frozen while the node is made as aws-node leaves it, then killed: the next start
    // is the first of vpcnet on a node where aws-node ran.
    const pidsDir = labLayout(name, 0).files.pidsDir;
    const agent = (await readRecords(pidsDir)).find((r) => r.role === `agent-${node.name}`)!;
    process.kill(agent.pid, 'SIGSTOP');

    const live: AwsPod[] = [];
    for (const [k, ip, table] of [
      [1, p1!, 254],
      [2, p2!, 254],
      [3, s1!, enis.secondary.routeTable],
    ] as const) {
      const pod = await newPod(name, `aw${k}`, { name: `web-${k}` });
      netns.push(pod.netnsName);
      const p = { pod, ip, veth: awsVeth(pod.namespace, pod.name), table };
      await wireAsAwsNode(node, p);
      await registerPod(name, node.name, pod.namespace, pod.name, `uid-aw${k}`);
      await startNetnsServer(pod.netnsName, SERVER(pod.name), servers);
      live.push(p);
    }
    // A pod deleted while no agent ran: its checkpoint entry and rules stay, its veth is gone.
    const dead = { ip: s2!, name: 'gone', containerId: `dead${'0'.repeat(20)}` };
    const table = enis.secondary.routeTable;
    await ip(node.netns, `rule add to ${dead.ip}/32 table main priority 512`);
    await ip(node.netns, `rule add from ${dead.ip}/32 table ${table} priority 1536`);
    // aws-node's rule for the secondary ENI's own address (vpcnet's is at 1536).
    await ip(node.netns, `rule del from ${enis.secondary.primaryIp}/32 table ${table} priority 1536`);
    await ip(node.netns, `rule add from ${enis.secondary.primaryIp}/32 table ${table} priority 32765`);
    await awsNodeFirewall(node, enis.primary.primaryIp);
    const entry = (containerId: string, ip: string, podName: string) => ({
      networkName: 'aws-cni',
      containerID: containerId,
      ifName: 'eth0',
      ipv4: ip,
      allocationTimestamp: Date.now() * 1e6,
      metadata: { k8sPodNamespace: 'default', k8sPodName: podName },
    });
    await mkdir(dirname(layout.awsNodeCheckpoint), { recursive: true });
    await writeFile(
      layout.awsNodeCheckpoint,
      JSON.stringify({
        version: 'vpc-cni-ipam/1',
        allocations: [
          ...live.map((p) => entry(p.pod.containerId, p.ip, p.pod.name)),
          entry(dead.containerId, dead.ip, dead.name),
        ],
      }),
    );
    for (const f of ['ledger.json', 'ledger.json.journal'])
      await rm(join(layout.stateDir, f), { force: true });
    for (const p of live)
      assert.equal(
        await answer(host.netns, p.ip),
        p.pod.name,
        `${p.pod.name} answers under aws-node's wiring`,
      );

    await restartAgent(name, node, 'SIGKILL');

    const state = (await agentState(node)) as unknown as AdoptionState;
    const adoption = state.adoption!;
    assert.deepEqual(
      adoption.adopted.map((a) => [a.pod, a.ip, a.hostVeth, a.key.network]).sort(),
      live.map((p) => [`default/${p.pod.name}`, p.ip, p.veth, 'vpcnet']).sort(),
    );
    assert.deepEqual(
      adoption.notAdopted.map((n) => [n.pod, n.ip]),
      [['default/gone', dead.ip]],
    );
    assert.match(adoption.notAdopted[0]!.reason, /no host veth/);
    assert.deepEqual(adoption.problems, []);
    for (const p of live) {
      assert.equal(await answer(host.netns, p.ip), p.pod.name, `${p.pod.name} answers after the adoption`);
      assert.ok(await reaches(p.pod.netnsName, host.ip), `${p.pod.name} reaches the VPC`);
    }
    const elements = await snatElements(node);
    for (const p of live) assert.ok(elements.includes(p.ip), `${p.ip} joined vpcnet's SNAT set`);

    // aws-node's leftovers are gone; someone else's rule in the same chain stays.
    const saved = await iptablesSave(node);
    assert.doesNotMatch(saved, /AWS/, 'aws-node chains or rules remain');
    assert.match(saved, /kubernetes postrouting rules/);
    assert.notEqual(
      (await inNode(node, ['nft', 'list', 'table', 'ip', 'aws-cni'])).code,
      0,
      'aws-cni table remains',
    );
    const rules = await nodeRules(node);
    assert.equal(rules.filter((r) => r.priority === 32765 && r.src === enis.secondary.primaryIp).length, 0);
    // The gone pod's rules are recovery's to hold until the next reconcile pass finds no veth for them.
    await waitFor(
      "the gone pod's rules to be collected",
      async () =>
        (await nodeRules(node)).some((r) => r.src === dead.ip || r.dst === dead.ip) ? undefined : true,
      30_000,
    );

    // New pods never get an adopted pod's address.
    const fresh: TestPod[] = [];
    for (const k of [1, 2, 3]) {
      const pod = await newPod(name, `vn${k}`);
      netns.push(pod.netnsName);
      fresh.push(pod);
      let last: unknown;
      const { ip } = await waitFor(
        `${pod.name}'s ADD`,
        () =>
          addPod(node, pod).catch((err: unknown) => {
            last = err;
            throw err;
          }),
        90_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; the last ADD: ${String(last)}`);
      });
      assert.ok(!live.some((p) => p.ip === ip), `${ip} was handed out again while its adopted pod lives`);
      assert.ok(await reaches(pod.netnsName, host.ip));
    }

    // The runtime's DEL of an adopted pod (vpcnet's conflist, so vpcnet's network name).
    const [gone, ...kept] = live;
    assert.equal((await cni(node, 'DEL', gone!.pod)).exitCode, 0);
    assert.ok(!(await hostLinks(node)).includes(gone!.veth), "the adopted pod's veth is removed");
    assert.equal((await nodeRules(node)).filter((r) => r.dst === gone!.ip).length, 0);
    assert.ok(!(await snatElements(node)).includes(gone!.ip));
    const after1 = await agentState(node);
    assert.ok(
      after1.cooling.some((c) => c.ip === gone!.ip),
      'its address cools down before reuse',
    );
    for (const p of kept)
      assert.equal(await answer(host.netns, p.ip), p.pod.name, `${p.pod.name} still answers`);

    // A second start (a ledger exists now) adopts nothing again and keeps everyone.
    await restartAgent(name, node, 'SIGTERM');
    const again = (await agentState(node)) as unknown as AdoptionState;
    assert.equal(again.adoption, undefined);
    for (const p of kept) assert.equal(await answer(host.netns, p.ip), p.pod.name);

    for (const pod of [...kept.map((p) => p.pod), ...fresh])
      assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
    assert.deepEqual(
      (await hostLinks(node)).filter((l) => l.startsWith('eni') || l.startsWith('vpc')),
      [],
      'veths remain after every DEL',
    );
    assert.deepEqual((await agentState(node)).attachments, []);
  });

  test('vpcnet does not start while aws-node’s ipamd listens on the node', async () => {
    const layout = labLayout(name, 1).nodes[0]!;
    await mkdir(dirname(layout.awsNodeCheckpoint), { recursive: true });
    await writeFile(layout.awsNodeCheckpoint, JSON.stringify({ version: 'vpc-cni-ipam/1', allocations: [] }));
    const ipamd: ChildProcess[] = [];
    await startNetnsServer(
      node.netns,
      "require('node:net').createServer(() => {}).listen(50051, '127.0.0.1', () => console.log('listening'))",
      ipamd,
    );
    const pidsDir = labLayout(name, 0).files.pidsDir;
    const role = `agent-${node.name}`;
    const before = (await readRecords(pidsDir)).find((r) => r.role === role)!;
    try {
      process.kill(before.pid, 'SIGTERM');
      await waitFor(
        'the agent to refuse to start',
        async () =>
          (await readFile(layout.agentLog, 'utf8')).includes("aws-node's ipamd is running on this node")
            ? true
            : undefined,
        30_000,
      );
    } finally {
      stopNetnsServers(ipamd);
    }
    // Once ipamd is gone the supervisor's next restart serves (no ledger lost: nothing adopted).
    await waitFor(
      'the agent to serve again',
      async () => {
        const now = (await readRecords(pidsDir)).find((r) => r.role === role);
        if (now === undefined || now.pid === before.pid) return undefined;
        return (await getJson(node.agentSocket, '/v1/healthz')).status === 200 ? true : undefined;
      },
      90_000,
    );
    assert.equal(((await agentState(node)) as unknown as AdoptionState).adoption, undefined);
  });
});
