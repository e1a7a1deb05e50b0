// IPv6 pods (ENABLE_IPv6) on the real kernel, with both drivers (the netlink helper and ip): a
// "node" namespace routing a /80 of the VPC between a "VPC" namespace and a pod. The pod's /128 is
// reached from the node and from the VPC, CHECK finds nothing, a deleted host route is reported and
// restored by the reconcile loop, the pod's IPv4 egress leaves with the node's IPv4 (seen at the
// receiver), and DEL leaves nothing. Namespaces are named v6n-* and always removed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { Ipv6NodeError } from '../../src/dataplane/ipv6-node.ts';
import type { Kernel } from '../../src/dataplane/kernel.ts';
import { NetlinkKernel } from '../../src/dataplane/netlink/netlink-kernel.ts';
import { KeyedSerializer } from '../../src/infra/keyed-serializer.ts';
import { silentLogger } from '../../src/infra/log.ts';
import { Ledger } from '../../src/ledger/ledger.ts';
import { MemoryLedgerStore } from '../../src/ledger/testing/memory-store.ts';
import type { Attachment, AttachmentKey } from '../../src/plan/attachment.ts';
import { egressVethName, planIpv6Pod } from '../../src/plan/ipv6-pod-plan.ts';
import { hostVethName } from '../../src/plan/names.ts';
import { Reconciler } from '../../src/reconcile/reconciler.ts';
import { execIn, mustExecIn, netnsPath, withNetnsCleanup } from '../netns-fixture.ts';

type Create = (prefix: string) => Promise<string>;

const HELPER = join(import.meta.dirname, '..', '..', 'bin', 'vpcnet-netlink');
const NODE_V6 = '2001:db8:5e00::10';
const VPC_HOST_V6 = '2001:db8:5e00::20';
const POD_PREFIX = '2001:db8:5e00:0:1::/80';
const POD_IP = '2001:db8:5e00:0:1::5';
const NODE_V4 = '10.0.0.10';
const RECEIVER_V4 = '10.0.0.20';
const EGRESS_IP = '169.254.172.2';
const KEY: AttachmentKey = { network: 'vpcnet', containerId: 'c6a1', ifName: 'eth0' };

const drivers: readonly { name: string; make: (node: string) => Kernel & { close?: () => Promise<void> } }[] =
  [
    {
      name: 'netlink helper',
      make: (node) => new NetlinkKernel({ program: HELPER, hostNetns: netnsPath(node) }),
    },
    { name: 'ip driver', make: (node) => new IpCliKernel({ hostNetns: netnsPath(node) }) },
  ];

/** Node and VPC namespaces joined by a link; the VPC routes the pods' /80 via the node. */
async function makeTopology(create: Create): Promise<{ node: string; vpc: string }> {
  const node = await create('v6n-node-');
  const vpc = await create('v6n-vpc-');
  await mustExecIn(node, ['ip', 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'downlink']);
  await mustExecIn(node, ['ip', 'link', 'set', 'downlink', 'netns', vpc]);
  for (const [ns, dev, v6, v4] of [
    [node, 'uplink', NODE_V6, NODE_V4],
    [vpc, 'downlink', VPC_HOST_V6, RECEIVER_V4],
  ] as const) {
    await mustExecIn(ns, ['ip', 'addr', 'add', `${v6}/64`, 'dev', dev, 'nodad']);
    await mustExecIn(ns, ['ip', 'addr', 'add', `${v4}/24`, 'dev', dev]);
    await mustExecIn(ns, ['ip', 'link', 'set', dev, 'up']);
  }
  await mustExecIn(vpc, ['ip', 'route', 'add', POD_PREFIX, 'via', NODE_V6]);
  await mustExecIn(node, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  return { node, vpc };
}

// One echo every 0.2 s until the first reply or the deadline: right after the veth comes up, the
// first request can be lost while the node's side is still resolving its neighbour (seen once).
async function pings(ns: string, ip: string, waitSeconds = 3): Promise<boolean> {
  const r = await execIn(ns, ['ping', '-c', '1', '-i', '0.2', '-w', String(waitSeconds), ip]);
  return r.code === 0;
}

/** The source address a UDP datagram from `from` to the receiver in `to` arrives with. */
async function udpSourceSeen(from: string, to: string, dst: string): Promise<string> {
  const server = spawn(
    'ip',
    [
      'netns',
      'exec',
      to,
      process.execPath,
      '-e',
      `const s = require('node:dgram').createSocket('udp4');
       s.on('message', (_m, r) => { console.log(r.address); process.exit(0); });
       s.bind(9999, () => console.log('ready'));
       setTimeout(() => process.exit(2), 20000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const done = new Promise<number | null>((resolve) => server.on('exit', resolve));
  const ready = new Promise<void>((resolve) =>
    server.stdout.on('data', (d: Buffer) => {
      lines.push(...d.toString().trim().split('\n'));
      if (lines.includes('ready')) resolve();
    }),
  );
  await ready;
  // A few datagrams: one that waits for neighbour resolution is queued, not lost, but be generous.
  const send = `const s = require('node:dgram').createSocket('udp4');
    let n = 0; const t = setInterval(() => { s.send('x', 9999, '${dst}'); if (++n === 5) { clearInterval(t); setTimeout(() => s.close(), 100); } }, 100);`;
  await mustExecIn(from, [process.execPath, '-e', send]);
  await done;
  return lines.filter((l) => l !== 'ready')[0] ?? 'nothing';
}

for (const driver of drivers) {
  test(`IPv6 pod on the ${driver.name}: reached from node and VPC, checked, repaired, IPv4 egress SNATed, removed`, async () => {
    await withNetnsCleanup(async (create) => {
      const { node, vpc } = await makeTopology(create);
      const pod = await create('v6n-pod-');
      const kernel = driver.make(node);
      try {
        const dp = new Dataplane(kernel);
        await mustExecIn(node, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=0']);
        await assert.rejects(dp.setupIpv6Node({ v4Egress: { snatSource: NODE_V4 } }), (err: unknown) => {
          assert.ok(err instanceof Ipv6NodeError);
          assert.match(err.message, /net\.ipv6\.conf\.all\.forwarding=1 .* it is 0/);
          return true;
        });
        await mustExecIn(node, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1']);
        await dp.setupIpv6Node({ v4Egress: { snatSource: NODE_V4 } });
        // Idempotent: a second start replaces the rule, it does not add one.
        await dp.setupIpv6Node({ v4Egress: { snatSource: NODE_V4, randomizeSnat: 'none' } });
        const table = await mustExecIn(node, ['nft', 'list', 'table', 'ip', 'vpcnet_v4egress']);
        assert.equal(table.stdout.match(/snat to/g)?.length, 1, table.stdout);

        const resources = planIpv6Pod({
          key: KEY,
          vethPrefix: 'vpc',
          ip: POD_IP,
          eniId: 'eni-1',
          mtu: 1500,
          v4EgressIp: EGRESS_IP,
        });
        await dp.create(netnsPath(pod), resources);
        assert.deepEqual(await dp.inspect(netnsPath(pod), resources), { findings: [] });
        assert.ok(await pings(node, POD_IP), 'node -> pod');
        assert.ok(await pings(vpc, POD_IP), 'VPC -> pod, routed by the node');
        const addr = await mustExecIn(pod, ['ip', '-j', 'addr', 'show', 'dev', 'eth0']);
        assert.match(addr.stdout, /"local":"2001:db8:5e00:0:1::5","prefixlen":128,[^}]*"nodad":true/);

        // Drift: the node's route to the pod deleted by hand. CHECK says so; one pass restores it.
        const hostVeth = hostVethName(KEY, 'vpc');
        await mustExecIn(node, ['ip', '-6', 'route', 'del', `${POD_IP}/128`, 'dev', hostVeth]);
        const drift = await dp.inspect(netnsPath(pod), resources);
        assert.deepEqual(
          drift.findings.map((f) => f.problem),
          [`host route ${POD_IP} dev ${hostVeth} metric 1024 missing`],
        );
        const ledger = await Ledger.open(new MemoryLedgerStore(), { now: Date.now });
        const att: Attachment = {
          key: KEY,
          pod: { namespace: 'default', name: 'v6', uid: 'u6' },
          netns: netnsPath(pod),
          createdAt: Date.now(),
          resources,
        };
        ledger.put(att);
        const reconciler = new Reconciler({
          ledger,
          dataplane: dp,
          serializer: new KeyedSerializer(),
          log: silentLogger,
          clock: { now: Date.now },
          vethPrefix: 'vpc',
          protectedAddresses: () => new Set(),
        });
        const report = await reconciler.runOnce();
        assert.deepEqual(
          report.repaired.map((r) => r.fixed),
          [[`host route ${POD_IP} dev ${hostVeth} metric 1024 missing`]],
        );
        assert.deepEqual([report.collected, report.failures], [[], []], 'nothing else collected or failed');
        assert.deepEqual(await dp.inspect(netnsPath(pod), resources), { findings: [] });
        assert.ok(await pings(vpc, POD_IP), 'VPC -> pod after the repair');

        // IPv4 egress: the receiver sees the node's IPv4, never the pod's node-local address.
        assert.equal(await udpSourceSeen(pod, vpc, RECEIVER_V4), NODE_V4);

        await dp.remove(resources);
        const links = await mustExecIn(node, ['ip', '-j', 'link', 'show']);
        assert.doesNotMatch(links.stdout, new RegExp(`${hostVeth}|${egressVethName(KEY, 'vpc')}`));
        const podLinks = await mustExecIn(pod, ['ip', '-j', 'link', 'show']);
        assert.doesNotMatch(podLinks.stdout, /eth0|v4if0/);
        const routes = await mustExecIn(node, ['ip', '-6', 'route', 'show', 'table', 'all']);
        assert.doesNotMatch(routes.stdout, /2001:db8:5e00:0:1::5/);
        assert.equal(await pings(vpc, POD_IP, 1), false, 'the pod is gone');
      } finally {
        await kernel.close?.();
      }
    });
  });
}
