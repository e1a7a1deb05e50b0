// Branch ENIs through the Linux fabric in real namespaces, for the trunk-mode suites
// (fabric.test.ts: 'macvlan' on this kernel; fabric-vlan.test.ts: 'vlan' under User-Mode Linux).
// The emulator runs in this process with a lab's VPC namespace as its fabric's VPC side; the
// suite plays the agent (it labels the node and plumbs the node side by hand) and the lab (it
// asks the resource controller for a pod's branch ENI).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LaunchedInstance, RunningEmulator } from '../../src/emulator/api.ts';
import { vpcLinkName } from '../../src/emulator/fabric/link-names.ts';
import { LinuxFabric } from '../../src/emulator/fabric/linux-fabric.ts';
import { branchLinkName, type TrunkDriver } from '../../src/emulator/fabric/trunk-branches.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { runCommand } from '../../src/lab/command.ts';
import { type LabLayout, labLayout, NODE_SUBNET } from '../../src/lab/layout.ts';
import { createLabNetwork, listNetns } from '../../src/lab/netns.ts';
import { labDown } from '../../src/lab/verbs/down.ts';

export interface PodEniEntry {
  eniId: string;
  ifAddress: string;
  privateIp: string;
  vlanId: number;
  subnetCidr: string;
}

export interface EniTraffic {
  eniId: string;
  interfaceType: string;
  receivedPackets: number;
}

export interface BranchLab {
  readonly layout: LabLayout;
  readonly emulator: RunningEmulator;
  readonly url: string;
  readonly instance: LaunchedInstance;
  readonly trunk: { eniId: string; deviceIndex: number };
  close(): Promise<{ leftNamespaces: string[] }>;
}

export function ip(netns: string, ...args: string[]): Promise<string> {
  return runCommand('ip', ['-n', netns, ...args]);
}

export function inNs(netns: string, ...args: string[]): Promise<string> {
  return runCommand('ip', ['netns', 'exec', netns, ...args]);
}

export async function pings(netns: string, target: string, count = 1): Promise<boolean> {
  return inNs(netns, 'ping', '-c', String(count), '-i', '0.2', '-W', '2', target).then(
    () => true,
    () => false,
  );
}

export async function api(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  type = 'application/json',
) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': type },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: (text === '' ? undefined : JSON.parse(text)) as unknown };
}

/** A lab VPC with one m5.large node whose agent asked for (and got) a trunk ENI. */
export async function startBranchLab(mode: TrunkDriver): Promise<BranchLab> {
  const name = `vpclb${randomBytes(3).toString('hex')}`;
  const layout = labLayout(name, 1);
  const node = layout.nodes[0]!;
  let emulator: RunningEmulator | undefined;
  const close = async () => {
    await emulator?.close();
    await labDown(name);
    return { leftNamespaces: (await listNetns()).filter((n) => n.startsWith(`${name}-`)) };
  };
  try {
    await createLabNetwork(layout);
    // Nothing but the suite's own packets on the node's links: no IPv6 chatter to count.
    await inNs(
      node.netns,
      'sysctl',
      '-q',
      '-w',
      'net.ipv6.conf.all.disable_ipv6=1',
      'net.ipv6.conf.default.disable_ipv6=1',
    );
    emulator = await startEmulator({
      vpc: layout.vpc,
      listen: [{ host: '127.0.0.1', port: 0 }],
      fabric: new LinuxFabric({ vpcNetns: layout.vpcNetns, trunkMode: mode }),
    });
    const url = emulator.urls[0]!;
    const instance = await emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: NODE_SUBNET.subnetId,
      netns: node.netns,
      nodeName: node.name,
    });
    // What the agent does with ENABLE_POD_ENI: ask the resource controller for a trunk.
    await api(
      url,
      'PATCH',
      `/api/v1/nodes/${node.name}`,
      { metadata: { labels: { 'vpc.amazonaws.com/has-trunk-attached': 'false' } } },
      'application/merge-patch+json',
    );
    const trunk = await waitFor(async () => {
      const state = (await api(url, 'GET', '/admin/state')).json as {
        enis: { eniId: string; interfaceType: string; attachment: { deviceIndex: number } | null }[];
      };
      const t = state.enis.find((e) => e.interfaceType === 'trunk' && e.attachment !== null);
      return t === undefined ? undefined : { eniId: t.eniId, deviceIndex: t.attachment!.deviceIndex };
    }, 'a trunk ENI attached to the node');
    return { layout, emulator, url, instance, trunk, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Polls `probe` until it yields a value, for at most 15 s (the controller works asynchronously). */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not seen within 15 s: ${what}`);
    await sleep(50);
  }
}

/** Registers pod NS/P on the lab's node and has the controller give it a branch ENI. */
export async function podWithBranch(lab: BranchLab, namespace: string, pod: string): Promise<PodEniEntry> {
  const created = await api(lab.url, 'POST', `/api/v1/namespaces/${namespace}/pods`, {
    metadata: { name: pod },
    spec: { nodeName: lab.layout.nodes[0]!.name, containers: [{ name: 'c', image: 'pause' }] },
  });
  if (created.status !== 201) throw new Error(`pod create answered ${created.status}`);
  const r = await api(lab.url, 'POST', '/admin/pod-eni', {
    namespace,
    name: pod,
    securityGroupIds: ['sg-pod'],
  });
  if (r.status !== 201) throw new Error(`pod-eni answered ${r.status}: ${JSON.stringify(r.json)}`);
  return r.json as PodEniEntry;
}

/**
 * What the agent's trunk driver does for a branch, in its simplest form: a device on the trunk's
 * link carrying the branch MAC (a VLAN device with the branch's VLAN ID, or a macvlan device),
 * moved into a pod namespace with the branch's address and a default route via the gateway.
 */
export async function plumbPod(
  lab: BranchLab,
  mode: TrunkDriver,
  entry: PodEniEntry,
  podNetns: string,
): Promise<void> {
  const nodeNs = lab.layout.nodes[0]!.netns;
  const trunkLink = `eth${lab.trunk.deviceIndex}`;
  const dev = `br${entry.vlanId}`;
  await runCommand('ip', ['netns', 'add', podNetns]);
  await inNs(
    podNetns,
    'sysctl',
    '-q',
    '-w',
    'net.ipv6.conf.all.disable_ipv6=1',
    'net.ipv6.conf.default.disable_ipv6=1',
  );
  const kind =
    mode === 'vlan' ? ['type', 'vlan', 'id', String(entry.vlanId)] : ['type', 'macvlan', 'mode', 'bridge'];
  await ip(nodeNs, 'link', 'add', 'link', trunkLink, 'name', dev, 'address', entry.ifAddress, ...kind);
  await ip(nodeNs, 'link', 'set', dev, 'netns', podNetns, 'name', 'eth0');
  const prefix = entry.subnetCidr.split('/')[1]!;
  await ip(podNetns, 'link', 'set', 'lo', 'up');
  await ip(podNetns, 'addr', 'add', `${entry.privateIp}/${prefix}`, 'dev', 'eth0');
  await ip(podNetns, 'link', 'set', 'eth0', 'up');
  await ip(podNetns, 'route', 'add', 'default', 'via', NODE_SUBNET.gateway, 'dev', 'eth0');
}

export async function traffic(lab: BranchLab): Promise<Map<string, EniTraffic>> {
  const r = await api(lab.url, 'GET', '/admin/traffic');
  if (r.status !== 200) throw new Error(`traffic answered ${r.status}: ${JSON.stringify(r.json)}`);
  return new Map((r.json as { enis: EniTraffic[] }).enis.map((e) => [e.eniId, e]));
}

/** Per ENI, how many more packets the VPC received from it in `after` than in `before`. */
export function delta(
  before: Map<string, EniTraffic>,
  after: Map<string, EniTraffic>,
  eniId: string,
): number {
  return (after.get(eniId)?.receivedPackets ?? 0) - (before.get(eniId)?.receivedPackets ?? 0);
}

/** The suite both trunk modes pass. */
export function branchFabricSuite(mode: TrunkDriver): void {
  describe(`branch ENIs through the fabric in ${mode} mode (real namespaces)`, () => {
    let lab: BranchLab;
    let first: PodEniEntry;
    const podNs = () => `${lab.layout.name}-pod1`;

    before(async () => {
      lab = await startBranchLab(mode);
    });
    after(async () => {
      if (lab === undefined) return;
      const { leftNamespaces } = await lab.close();
      assert.deepEqual(leftNamespaces, []);
    });

    test("a pod on a branch ENI reaches a VPC host and back; its packets count on the branch, not the node's other ENIs", async () => {
      const vpc = lab.layout.vpcNetns;
      const host = lab.layout.hosts[0]!;
      first = await podWithBranch(lab, 'ns1', 'p1');
      assert.equal(first.vlanId, 1);
      await plumbPod(lab, mode, first, podNs());
      const viaLink = mode === 'vlan' ? branchLinkName(first.eniId) : vpcLinkName(lab.trunk.eniId);
      assert.match(await ip(vpc, 'route', 'show', `${first.privateIp}/32`), new RegExp(`dev ${viaLink}`));
      assert.match(
        await ip(vpc, 'neigh', 'show', first.privateIp, 'dev', viaLink),
        new RegExp(`lladdr ${first.ifAddress} PERMANENT`),
      );
      if (mode === 'vlan') {
        const [sub] = JSON.parse(await ip(vpc, '-d', '-j', 'link', 'show', 'dev', viaLink)) as {
          link: string;
          linkinfo: { info_kind: string; info_data: { id: number } };
        }[];
        assert.deepEqual([sub?.linkinfo.info_kind, sub?.linkinfo.info_data.id], ['vlan', first.vlanId]);
        assert.ok(viaLink.length <= 15);
      }
      const before = await traffic(lab);
      assert.ok(await pings(podNs(), host.ip, 5), 'the pod pings the VPC host');
      assert.ok(await pings(host.netns, first.privateIp), 'the VPC host pings the pod');
      const after = await traffic(lab);
      assert.equal(after.get(first.eniId)?.interfaceType, 'branch');
      assert.ok(
        delta(before, after, first.eniId) >= 6,
        `branch counted ${delta(before, after, first.eniId)}`,
      );
      assert.equal(delta(before, after, lab.trunk.eniId), 0, 'the trunk itself carried none of it');
      assert.equal(
        delta(before, after, lab.instance.primaryEni.eniId),
        0,
        'the primary ENI carried none of it',
      );
    });

    test('deleting the pod releases its branch ENI: the VPC side forgets its address and the traffic endpoint its ENI', async () => {
      const vpc = lab.layout.vpcNetns;
      const trunkBefore = (await traffic(lab)).get(lab.trunk.eniId)?.receivedPackets ?? 0;
      const r = await api(lab.url, 'DELETE', '/api/v1/namespaces/ns1/pods/p1');
      assert.equal(r.status, 200);
      await waitFor(
        async () => ((await traffic(lab)).has(first.eniId) ? undefined : true),
        'the branch released',
      );
      assert.equal((await ip(vpc, 'route', 'show', `${first.privateIp}/32`)).trim(), '');
      if (mode === 'vlan') {
        await assert.rejects(ip(vpc, 'link', 'show', 'dev', branchLinkName(first.eniId)), /does not exist/);
      } else {
        assert.equal((await ip(vpc, 'neigh', 'show', first.privateIp)).trim(), '');
        const counters = await inNs(vpc, 'nft', 'list', 'counters', 'table', 'netdev', 'vpcnet_fabric');
        assert.doesNotMatch(counters, new RegExp(vpcLinkName(first.eniId).slice(1)));
      }
      assert.ok(!(await pings(podNs(), lab.layout.hosts[0]!.ip)), 'the released branch carries nothing');
      const trunkAfter = (await traffic(lab)).get(lab.trunk.eniId)?.receivedPackets ?? 0;
      assert.ok(trunkAfter >= trunkBefore, 'the trunk count does not go backwards');
      await runCommand('ip', ['netns', 'del', podNs()]);
    });

    test('the next pod gets the freed VLAN ID and its traffic flows', async () => {
      const next = await podWithBranch(lab, 'ns1', 'p2');
      assert.equal(next.vlanId, first.vlanId);
      assert.notEqual(next.eniId, first.eniId);
      await plumbPod(lab, mode, next, podNs());
      assert.ok(await pings(podNs(), lab.layout.hosts[0]!.ip), 'the second pod pings the VPC host');
    });
  });
}
