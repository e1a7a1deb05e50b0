// NodePort traffic to a pod on a SECONDARY ENI, in one-node labs. The test plays kube-proxy: it
// DNATs a port of the node's primary IP to the pod (its own nft table in the node's namespace). A
// VPC host connects to the node's primary IP; the pod answers with a large reply; the node's link
// counters show which ENI the reply left by. What this proves: with the default
// (AWS_VPC_CNI_NODE_PORT_SUPPORT=true) the reply leaves through the primary ENI, where the
// connection came in; with it off, through the pod's secondary ENI. The lab's fabric does not
// drop a packet whose source is not an address of its ENI (the real VPC does, which is why the
// connection fails there without NodePort support), so the off case is shown by the counters, not
// by a failed connection.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import {
  addPod,
  deletePodNetns,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  sh,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';

const POD_PORT = 8080;
const NODE_PORT = 30080;
const REPLY_BYTES = 4 * 1024 * 1024;
/** t3.medium: 5 secondary addresses on the primary ENI, so the sixth pod lands on eth1. */
const PODS = 6;
const SERVER = `require('node:net').createServer((s) => { s.end(Buffer.alloc(${REPLY_BYTES}, 120)); }).listen(${POD_PORT}, '0.0.0.0', () => console.log('listening'))`;
const CLIENT = `let n = 0; const s = require('node:net').connect(${NODE_PORT}, process.argv[1]); s.on('data', (c) => { n += c.length; }); s.on('end', () => console.log(n)); s.on('error', (e) => { console.error(e.message); process.exit(1); }); s.setTimeout(20000, () => { console.error('timeout'); process.exit(1); });`;

interface Rule {
  priority: number;
  src?: string;
  table: string;
}

/** The first pod whose `from` rule sends it through an ENI table other than main. */
async function podOnSecondaryEni(node: LabNodeDesc, ips: string[]): Promise<string> {
  const rules = JSON.parse(await sh(['ip', '-n', node.netns, '-j', 'rule', 'show'])) as Rule[];
  const ip = ips.find((a) => rules.some((r) => r.priority === 1536 && r.src === a && r.table !== 'main'));
  if (ip === undefined) throw new Error(`no pod on a secondary ENI among ${ips.join(', ')}`);
  return ip;
}

async function txBytes(node: LabNodeDesc, dev: string): Promise<number> {
  const [link] = JSON.parse(await sh(['ip', '-n', node.netns, '-s', '-j', 'link', 'show', 'dev', dev])) as {
    stats64: { tx: { bytes: number } };
  }[];
  return link?.stats64.tx.bytes ?? 0;
}

async function eth0Ip(node: LabNodeDesc): Promise<string> {
  const [link] = JSON.parse(
    await sh(['ip', '-n', node.netns, '-j', '-4', 'addr', 'show', 'dev', 'eth0']),
  ) as {
    addr_info: { local: string }[];
  }[];
  const ip = link?.addr_info[0]?.local;
  if (ip === undefined) throw new Error(`eth0 of ${node.netns} has no IPv4 address`);
  return ip;
}

/** kube-proxy's part, in a table of the test's own: primary IP:NODE_PORT → pod:POD_PORT. */
async function dnatNodePort(node: LabNodeDesc, primaryIp: string, podIp: string): Promise<void> {
  const script = [
    'add table ip i1r_kubeproxy',
    'add chain ip i1r_kubeproxy pre { type nat hook prerouting priority dstnat; policy accept; }',
    `add rule ip i1r_kubeproxy pre ip daddr ${primaryIp} tcp dport ${NODE_PORT} dnat to ${podIp}:${POD_PORT}`,
  ].join('\n');
  const child = spawn('ip', ['netns', 'exec', node.netns, 'nft', '-f', '-'], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  child.stdin.end(`${script}\n`);
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`nft (test DNAT) in ${node.netns} exited with ${code}`);
}

interface Measured {
  received: number;
  eth0: number;
  eth1: number;
}

/** One NodePort connection from the VPC host; bytes received and what eth0 and eth1 sent meanwhile. */
async function nodePortConnection(lab: LabDesc, primaryIp: string): Promise<Measured> {
  const node = lab.nodes[0]!;
  const [e0, e1] = [await txBytes(node, 'eth0'), await txBytes(node, 'eth1')];
  const out = await sh([
    'ip',
    'netns',
    'exec',
    lab.vpcHosts[0]!.netns,
    process.execPath,
    '-e',
    CLIENT,
    primaryIp,
  ]);
  return {
    received: Number(out.trim()),
    eth0: (await txBytes(node, 'eth0')) - e0,
    eth1: (await txBytes(node, 'eth1')) - e1,
  };
}

function nodePortLab(env: string[]) {
  const name = uniqueLabName('i1r');
  const servers: ChildProcess[] = [];
  const pods: TestPod[] = [];
  const ctx = { lab: undefined as LabDesc | undefined, primaryIp: '' };
  before(async () => {
    const lab = await labUp(name, [
      '--instance-type',
      't3.medium',
      '--agent-env',
      'WARM_IP_TARGET=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
      ...env.flatMap((e) => ['--agent-env', e]),
    ]);
    ctx.lab = lab;
    const node = lab.nodes[0]!;
    const ips: string[] = [];
    for (let k = 0; k < PODS; k++) {
      const pod = await newPod(name, `np${k}`);
      pods.push(pod);
      ips.push((await addPod(node, pod)).ip);
    }
    const target = await podOnSecondaryEni(node, ips);
    await startNetnsServer(pods[ips.indexOf(target)]!.netnsName, SERVER, servers);
    ctx.primaryIp = await eth0Ip(node);
    await dnatNodePort(node, ctx.primaryIp, target);
  });
  after(async () => {
    stopNetnsServers(servers);
    await deletePodNetns(pods);
    await labDown(name);
  });
  return ctx;
}

describe('NodePort to a pod on a secondary ENI, default settings', { timeout: 300_000 }, () => {
  const ctx = nodePortLab([]);

  test('the reply leaves through the primary ENI, where the connection came in', async () => {
    const m = await nodePortConnection(ctx.lab!, ctx.primaryIp);
    assert.equal(m.received, REPLY_BYTES, 'the whole reply arrived at the VPC host');
    assert.ok(m.eth0 >= REPLY_BYTES, `eth0 sent ${m.eth0} bytes, less than the reply`);
    assert.ok(m.eth1 < REPLY_BYTES / 4, `eth1 sent ${m.eth1} bytes: the reply went out the pod's ENI`);
  });

  test("the node's table holds the mark chain and the fwmark rule sends marked packets to main", async () => {
    const node = ctx.lab!.nodes[0]!;
    const chain = await sh([
      'ip',
      'netns',
      'exec',
      node.netns,
      'nft',
      'list',
      'chain',
      'ip',
      'vpcnet',
      'nodeport',
    ]);
    assert.match(chain, /iifname "eth0" fib daddr \. iif type local ct mark set ct mark \| 0x0*80/);
    const rules = await sh(['ip', '-n', node.netns, 'rule', 'show', 'prio', '1024']);
    assert.match(rules, /fwmark 0x80\/0x80 lookup main/);
  });
});

describe('NodePort to a pod on a secondary ENI, AWS_VPC_CNI_NODE_PORT_SUPPORT=false', {
  timeout: 300_000,
}, () => {
  const ctx = nodePortLab(['AWS_VPC_CNI_NODE_PORT_SUPPORT=false']);

  test("the reply leaves through the pod's secondary ENI with the primary IP as source (the VPC would drop it)", async () => {
    const m = await nodePortConnection(ctx.lab!, ctx.primaryIp);
    // The lab's fabric forwards it anyway; the counters show the path.
    assert.equal(m.received, REPLY_BYTES);
    assert.ok(m.eth1 >= REPLY_BYTES, `eth1 sent ${m.eth1} bytes, less than the reply`);
    assert.ok(m.eth0 < REPLY_BYTES / 4, `eth0 sent ${m.eth0} bytes`);
    const rules = await sh(['ip', '-n', ctx.lab!.nodes[0]!.netns, 'rule', 'show', 'prio', '1024']);
    assert.equal(rules.trim(), '', 'no fwmark rule');
  });
});
