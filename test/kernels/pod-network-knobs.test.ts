// aws-node's pod network knobs on the real kernel, through the netlink driver (the agent's), each
// in namespaces of its own, all removed afterwards: IPv6 egress of an IPv4 pod (ENABLE_V6_EGRESS)
// reaching an IPv6 host with the node's address, new connections into the egress range refused;
// AWS_EXTERNAL_SERVICE_CIDRS steering a secondary-ENI pod's traffic to the main table; and
// `vpcnetctl install` run in a namespace turning its TCP early demux off (DISABLE_TCP_EARLY_DEMUX).
// Sysctls are set only inside the namespaces made here.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { setupExternalServiceRules } from '../../src/dataplane/external-service-rules.ts';
import type { AttachmentKey } from '../../src/plan/attachment.ts';
import { hostVethName } from '../../src/plan/names.ts';
import { MAIN_TABLE, planRegularPod } from '../../src/plan/pod-plan.ts';
import { v6EgressVethName } from '../../src/plan/v6-egress-plan.ts';
import { repoRoot } from '../lab-fixture.ts';
import { execIn, mustExecIn, netnsPath, withNetnsCleanup } from '../netns-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';
import { withNetlinkKernel } from './scenario-harness.ts';

const servers: ChildProcess[] = [];
after(() => stopNetnsServers(servers));

const KEY: AttachmentKey = { network: 'vpcnet', containerId: 'v6e0aaaa0001', ifName: 'eth0' };
const POD_IP = '10.0.0.50';
const NODE_V6 = '2001:db8:1::10';
const OUTSIDE_V6 = '2001:db8:1::99';
const PORT = 7078;
const PEER_SERVER = `require('node:net').createServer((s) => s.end(s.remoteAddress + '\\n')).listen(${PORT}, '::', () => console.log('listening'))`;
const PEER_CLIENT = `const s = require('node:net').connect(${PORT}, process.argv[1]); let d = ''; s.on('data', (c) => { d += c; }); s.on('end', () => console.log(d.trim())); s.on('error', (e) => { console.error(e.code); process.exit(1); }); s.setTimeout(5000, () => { console.error('timeout'); process.exit(1); });`;

/** Connects from `ns` to `ip`: the address the peer saw, or why it failed. */
async function connect(ns: string, ip: string): Promise<{ ok: boolean; text: string }> {
  const r = await execIn(ns, [process.execPath, '-e', PEER_CLIENT, ip]);
  return { ok: r.code === 0, text: (r.code === 0 ? r.stdout : r.stderr).trim() };
}

async function linkNames(ns: string): Promise<string[]> {
  const r = await mustExecIn(ns, ['ip', '-j', 'link', 'show']);
  return (JSON.parse(r.stdout) as { ifname: string }[]).map((l) => l.ifname);
}

test("an IPv4 pod's IPv6 reaches an IPv6 host with the node's address, and nothing gets in through its egress address", async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('pnk-node-');
    const pod = await create('pnk-pod-');
    const outside = await create('pnk-out-');
    // The node's uplink to an IPv6 host; the node forwards IPv6, as `vpcnetctl install` sets it.
    await mustExecIn(node, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
    await mustExecIn(node, [
      'ip',
      'link',
      'add',
      'up0',
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      outside,
    ]);
    await mustExecIn(node, ['ip', 'addr', 'add', `${NODE_V6}/64`, 'dev', 'up0', 'nodad']);
    await mustExecIn(node, ['ip', 'link', 'set', 'up0', 'up']);
    await mustExecIn(outside, ['ip', 'addr', 'add', `${OUTSIDE_V6}/64`, 'dev', 'eth0', 'nodad']);
    await mustExecIn(outside, ['ip', 'link', 'set', 'eth0', 'up']);
    await startNetnsServer(outside, PEER_SERVER, servers);
    const resources = planRegularPod({
      key: KEY,
      vethPrefix: 'vpc',
      ip: POD_IP,
      eniId: 'eni-1',
      routeTable: MAIN_TABLE,
      mtu: 9001,
      snat: false,
      v6EgressIp: 'fd00::ac:2',
    });
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const dp = new Dataplane(kernel);
      await dp.create(netnsPath(pod), resources);
      await kernel.setupV6Egress({ snatSource: NODE_V6 });
      assert.deepEqual((await dp.inspect(netnsPath(pod), resources)).findings, [], 'built as planned');
      // The host sees the node's IPv6, never the pod's node-local fd00::ac:2.
      assert.deepEqual(await connect(pod, OUTSIDE_V6), { ok: true, text: NODE_V6 });
      // A new connection forwarded into the egress range is rejected (upstream's block rule).
      await mustExecIn(outside, ['ip', 'route', 'add', 'fd00::ac:0/118', 'via', NODE_V6]);
      // The pod listens on the port: without the rule the connection would be made.
      await startNetnsServer(pod, PEER_SERVER, servers);
      assert.equal((await connect(pod, '::1')).ok, true, 'the pod accepts connections');
      assert.deepEqual(await connect(outside, 'fd00::ac:2'), { ok: false, text: 'ECONNREFUSED' });
      await dp.remove(resources, { netns: netnsPath(pod) });
      await kernel.setupV6Egress(undefined);
    });
    const names = await linkNames(node);
    assert.ok(!names.includes(v6EgressVethName(KEY, 'vpc')), 'the egress veth went with the pod');
    assert.ok(!names.includes(hostVethName(KEY, 'vpc')));
    const tables = await mustExecIn(node, ['nft', 'list', 'tables']);
    assert.doesNotMatch(tables.stdout, /vpcnet_v6egress/);
  });
});

/** The link the node routes a packet by, as it arrives from the pod's host veth. */
async function routedVia(node: string, dst: string, iif: string): Promise<string> {
  const r = await mustExecIn(node, ['ip', '-j', 'route', 'get', dst, 'from', POD_IP, 'iif', iif]);
  return (JSON.parse(r.stdout) as { dev: string }[])[0]?.dev ?? '';
}

test("AWS_EXTERNAL_SERVICE_CIDRS: a secondary ENI's pod reaches those CIDRs through the main table, everything else through its ENI", async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('pnk-node-');
    const pod = await create('pnk-pod-');
    await mustExecIn(node, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    // eth0: the primary ENI (main table); eth1: a secondary ENI with its own table 2.
    for (const [dev, ip] of [
      ['eth0', '10.0.0.10'],
      ['eth1', '10.0.0.20'],
    ] as const) {
      // A veth whose peer is up stands for the ENI's link (this kernel has no dummy driver).
      await mustExecIn(node, ['ip', 'link', 'add', dev, 'type', 'veth', 'peer', 'name', `${dev}p`]);
      await mustExecIn(node, ['ip', 'link', 'set', `${dev}p`, 'up']);
      await mustExecIn(node, ['ip', 'addr', 'add', `${ip}/24`, 'dev', dev]);
      await mustExecIn(node, ['ip', 'link', 'set', dev, 'up']);
    }
    await mustExecIn(node, ['ip', 'route', 'add', 'default', 'via', '10.0.0.1', 'dev', 'eth0']);
    await mustExecIn(node, ['ip', 'route', 'add', 'default', 'via', '10.0.0.1', 'dev', 'eth1', 'table', '2']);
    // Left by an earlier configuration: a rule at 1535 for a CIDR no longer listed.
    await mustExecIn(node, ['ip', 'rule', 'add', 'to', '203.0.113.0/24', 'lookup', 'main', 'prio', '1535']);
    const key: AttachmentKey = { network: 'vpcnet', containerId: 'ext0aaaa0001', ifName: 'eth0' };
    const resources = planRegularPod({
      key,
      vethPrefix: 'vpc',
      ip: POD_IP,
      eniId: 'eni-2',
      routeTable: 2,
      mtu: 9001,
      snat: false,
    });
    const veth = hostVethName(key, 'vpc');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      await new Dataplane(kernel).create(netnsPath(pod), resources);
      assert.equal(await routedVia(node, '198.51.100.7', veth), 'eth1', 'before: out of its own ENI');
      await setupExternalServiceRules(kernel, ['198.51.100.0/24']);
    });
    assert.equal(await routedVia(node, '198.51.100.7', veth), 'eth0');
    assert.equal(
      await routedVia(node, '203.0.113.7', veth),
      'eth1',
      'the unlisted CIDR goes back to the ENI',
    );
    assert.equal(await routedVia(node, '192.0.2.7', veth), 'eth1');
    const rules = JSON.parse((await mustExecIn(node, ['ip', '-j', 'rule', 'show'])).stdout) as {
      priority: number;
      dst?: string;
      dstlen?: number;
    }[];
    assert.deepEqual(
      rules.filter((r) => r.priority === 1535).map((r) => `${r.dst}/${r.dstlen}`),
      ['198.51.100.0/24'],
    );
  });
});

test('vpcnetctl install with DISABLE_TCP_EARLY_DEMUX=true, run in a namespace, turns its early demux off', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'pnk-install-'));
  try {
    await withNetnsCleanup(async (create) => {
      const ns = await create('pnk-demux-');
      const read = async () =>
        (await mustExecIn(ns, ['cat', '/proc/sys/net/ipv4/tcp_early_demux'])).stdout.trim();
      assert.equal(await read(), '1', "a new namespace's default");
      await mkdir(join(dir, 'partners'));
      await writeFile(join(dir, 'partners', 'portmap'), '');
      const install = [
        'env',
        'DISABLE_TCP_EARLY_DEMUX=true',
        process.execPath,
        join(repoRoot, 'bin', 'vpcnetctl'),
        'install',
        '--cni-bin-dir',
        join(dir, 'bin'),
        '--cni-conf-dir',
        join(dir, 'net.d'),
        '--partner-plugins-dir',
        join(dir, 'partners'),
      ];
      await mustExecIn(ns, install);
      assert.equal(await read(), '0');
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
