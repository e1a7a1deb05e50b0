// IPv6 pods end to end, in a dual-stack lab whose agent runs with ENABLE_IPv6=true and
// ENABLE_PREFIX_DELEGATION=true (as upstream requires): a pod gets a /128 out of the /80 on its
// node's primary ENI, reaches the dual-stack VPC host with its own address (no SNAT of IPv6), is
// reached by it and by another pod, and reaches an IPv4 host outside the VPC through v4if0 with the
// node's primary IPv4 as source (ENABLE_V4_EGRESS, on by default). CHECK through the plugin, an
// agent restart and DEL treat IPv6 attachments as they treat IPv4 ones.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { ipv6CidrContains, parseIpv6, parseIpv6Cidr } from '../../src/infra/ipv6-cidr.ts';
import { addOutsideHost, type OutsideHost } from '../../src/lab/outside-host.ts';
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
  nodePrimaryIpv4,
  reaches,
  restartAgent,
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';

const PORT = 7078;
/** Answers each connection with the peer address it sees (IPv4-mapped forms unwrapped), on both families. */
const PEER_SERVER = `require('node:net').createServer((s) => s.end(String(s.remoteAddress).replace(/^::ffff:/, '') + '\\n')).listen(${PORT}, '::', () => console.log('listening'))`;
const PEER_CLIENT = `const s = require('node:net').connect(${PORT}, process.argv[1]); let d = ''; s.on('data', (c) => { d += c; }); s.on('end', () => console.log(d.trim())); s.on('error', (e) => { console.error(e.message); process.exit(1); }); s.setTimeout(5000, () => { console.error('timeout'); process.exit(1); });`;

/** The source address the peer server at `ip` sees for a connection from `podNetns`. */
async function seenBy(podNetns: string, ip: string): Promise<string> {
  return (await sh(['ip', 'netns', 'exec', podNetns, process.execPath, '-e', PEER_CLIENT, ip])).trim();
}

interface Ipv6Result {
  cniVersion: string;
  interfaces: { name: string; sandbox?: string }[];
  ips: { address: string; gateway?: string; interface?: number }[];
  routes?: { dst: string; gw?: string }[];
}

/** Whether `ip` lies in the IPv6 CIDR `cidr`. */
function inCidr(ip: string, cidr: string): boolean {
  return ipv6CidrContains(parseIpv6Cidr(cidr), parseIpv6(ip));
}

/** The addresses of `dev` in `netns`, in one family. */
async function addressesOf(netns: string, family: '-4' | '-6', dev: string): Promise<string[]> {
  const out = JSON.parse(await sh(['ip', '-n', netns, '-j', family, 'addr', 'show', 'dev', dev])) as {
    addr_info: { local: string; prefixlen: number; scope: string }[];
  }[];
  return (out[0]?.addr_info ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`);
}

async function node80(node: LabNodeDesc): Promise<string> {
  const v6 = ((await agentState(node)).pool as { ipv6?: { prefix: string | null } }).ipv6;
  assert.ok(v6?.prefix, 'the agent holds a /80');
  return v6.prefix;
}

describe('IPv6 pods in a dual-stack lab', { timeout: 300_000 }, () => {
  const name = uniqueLabName('v6p');
  const servers: ChildProcess[] = [];
  let lab: LabDesc;
  let node: LabNodeDesc;
  let vpcHost: { netns: string; ipv6: string };
  let outside: OutsideHost;
  const pods: { pod: TestPod; ip: string; result: Ipv6Result }[] = [];

  before(async () => {
    lab = await labUp(name, [
      '--ipv6',
      '--agent-env',
      'ENABLE_IPv6=true',
      '--agent-env',
      'ENABLE_PREFIX_DELEGATION=true',
    ]);
    node = lab.nodes[0]!;
    const host = lab.vpcHosts[0]!;
    assert.ok(host.ipv6, 'the dual-stack lab has a VPC host with an IPv6 address');
    vpcHost = { netns: host.netns, ipv6: host.ipv6 };
    outside = await addOutsideHost(name, lab.vpcNetns, 'out1', '198.51.100');
    await startNetnsServer(vpcHost.netns, PEER_SERVER, servers);
    await startNetnsServer(outside.netns, PEER_SERVER, servers);
    for (const short of ['p1', 'p2']) {
      const pod = await newPod(name, short);
      const added = await addPod(node, pod);
      pods.push({ pod, ip: added.ip, result: added.result as Ipv6Result });
    }
  });
  after(async () => {
    stopNetnsServers(servers);
    await labDown(name);
  });

  test("each pod gets a /128 out of the node's /80, on eth0, and the result says so", async () => {
    const prefix = await node80(node);
    const [a, b] = pods;
    assert.ok(a && b);
    assert.notEqual(a.ip, b.ip);
    for (const { pod, ip, result } of pods) {
      assert.ok(inCidr(ip, prefix), `${ip} is in ${prefix}`);
      assert.deepEqual(await addressesOf(pod.netnsName, '-6', 'eth0'), [`${ip}/128`]);
      const reported = result.ips.map((i) => i.address);
      assert.deepEqual(reported, [`${ip}/128`], 'only the IPv6 address is a pod IP in the result');
      assert.ok(result.interfaces.some((i) => i.name === 'eth0' && i.sandbox === pod.netnsPath));
    }
  });

  test("a pod reaches the dual-stack VPC host, which sees the pod's own IPv6 address", async () => {
    for (const { pod, ip } of pods) assert.equal(await seenBy(pod.netnsName, vpcHost.ipv6), ip);
  });

  test('the VPC host and the other pod reach a pod over IPv6', async () => {
    const [a, b] = pods;
    assert.ok(a && b);
    assert.ok(await reaches(vpcHost.netns, a.ip), 'VPC host → pod');
    assert.ok(await reaches(b.pod.netnsName, a.ip), 'pod → pod on the same node');
  });

  test("IPv4 egress: a pod reaches an IPv4 host outside the VPC, seen as the node's primary IPv4", async () => {
    const [a] = pods;
    assert.ok(a);
    const egress = await addressesOf(a.pod.netnsName, '-4', 'v4if0');
    assert.equal(egress.length, 1);
    assert.match(egress[0] ?? '', /^169\.254\.17[2-5]\.\d+\/32$/);
    assert.equal(await seenBy(a.pod.netnsName, outside.ip), await nodePrimaryIpv4(node));
  });

  test('CHECK passes for IPv6 pods, before and after an agent restart, which keeps the /80 and the pods', async () => {
    const prefix = await node80(node);
    for (const { pod, result } of pods) assert.equal((await cni(node, 'CHECK', pod, result)).exitCode, 0);
    await restartAgent(name, node);
    assert.equal(await node80(node), prefix, 'the restarted agent adopted the same /80');
    for (const { pod, ip, result } of pods) {
      const check = await cni(node, 'CHECK', pod, result);
      assert.equal(check.exitCode, 0, check.stdout);
      assert.equal(await seenBy(pod.netnsName, vpcHost.ipv6), ip);
    }
    const later = await newPod(name, 'p3');
    const { ip } = await addPod(node, later);
    assert.ok(!pods.some((p) => p.ip === ip), 'a new pod never gets an address a running pod holds');
    pods.push({ pod: later, ip, result: { cniVersion: '', interfaces: [], ips: [] } });
  });

  test('DEL removes both veths and the attachment; the address cools down before reuse', async () => {
    const gone = pods.pop();
    assert.ok(gone);
    const linksBefore = await hostLinks(node);
    const del = await cni(node, 'DEL', gone.pod);
    assert.equal(del.exitCode, 0, del.stdout);
    const state = await agentState(node);
    assert.ok(!state.attachments.some((a) => a.key.containerId === gone.pod.containerId));
    const linksAfter = await hostLinks(node);
    assert.equal(linksBefore.length - linksAfter.length, 2, 'the pod veth and the egress veth went');
    await waitFor(`${gone.ip} to cool down`, async () =>
      (await agentState(node)).cooling.some((c) => c.ip === gone.ip) ? true : undefined,
    );
    assert.ok(!(await reaches(vpcHost.netns, gone.ip)), 'nothing answers for the deleted pod');
  });
});
