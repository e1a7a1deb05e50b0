// One table of dataplane scenarios, run against the fake kernel (src/dataplane/dataplane.test.ts)
// and against the real one in network namespaces (test/dataplane-scenarios.test.ts). The same
// assertions pass on both, or the fake has drifted from the kernel it stands in for.
import assert from 'node:assert/strict';
import type { AttachmentKey } from '../../plan/attachment.ts';
import type { EniLinkSpec } from '../../plan/eni-plan.ts';
import type { KernelOp } from '../../plan/kernel-op.ts';
import { findOrphans, identityOf } from '../../plan/kinds.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import type { Dataplane } from '../dataplane.ts';
import { DataplaneError } from '../errors.ts';
import type { Namespace } from '../kernel.ts';

export interface Harness {
  readonly dataplane: Dataplane;
  /** A new, empty pod namespace; returns its path. */
  pod(): Promise<string>;
  deleteNetns(path: string): Promise<void>;
  /** A link on the node carrying `mac` (an ENI the cloud attached). */
  addNodeLink(name: string, mac: string): Promise<void>;
  setLinkDown(ns: Namespace, dev: string): Promise<void>;
  /** Changes made by hand (an operator, another program); they must succeed. */
  byHand(ns: Namespace, ops: readonly KernelOp[]): Promise<void>;
}

export interface Scenario {
  readonly name: string;
  /** The node's SNAT table is set up first (default true). */
  readonly nodeSetUp?: boolean;
  run(h: Harness): Promise<void>;
}

const NODE: Namespace = { side: 'node' };
export const SCENARIO_VPC = { vpcCidrs: ['10.0.0.0/16'], snatSource: '10.200.0.1' };

function key(containerId: string): AttachmentKey {
  return { network: 'vpcnet', containerId, ifName: 'eth0' };
}

function plan(containerId: string, ip: string, routeTable = 2): Resource[] {
  return planRegularPod({
    key: key(containerId),
    vethPrefix: 'vpc',
    ip,
    eniId: 'eni-1',
    routeTable,
    mtu: 9001,
    snat: true,
  });
}

function hostVeth(resources: readonly Resource[]): string {
  const veth = resources.find((r) => r.kind === 'veth');
  assert.ok(veth?.kind === 'veth');
  return veth.hostName;
}

async function problems(h: Harness, netns: string, resources: readonly Resource[]): Promise<string[]> {
  const seen = await h.dataplane.inspect(netns, resources);
  return [
    ...(seen.podUnreachable === undefined ? [] : [`pod unreachable`]),
    ...seen.findings.map((f) => f.problem),
  ];
}

async function nodeRulesFor(h: Harness, ip: string): Promise<string[]> {
  const node = await h.dataplane.observeNode();
  return node.rules
    .filter((r) => r.src === ip || r.dst === ip)
    .map((r) => `${r.priority} ${r.src} ${r.dst ?? '-'} ${r.table}`)
    .sort();
}

async function until(check: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const ENI: EniLinkSpec = {
  mac: '02:0e:0e:00:00:01',
  deviceNumber: 1,
  primaryIp: '10.0.1.10',
  subnetCidr: '10.0.1.0/24',
  gateway: '10.0.1.1',
  routeTable: 2,
  mtu: 9001,
};

export const scenarios: readonly Scenario[] = [
  {
    name: 'a pod plan is created in full and inspects clean, on both sides',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(netns, a);
      assert.deepEqual(await problems(h, netns, a), []);
      const pod = await h.dataplane.observePod(netns);
      assert.ok(pod.reachable);
      const eth0 = pod.links.find((l) => l.ifname === 'eth0');
      assert.deepEqual(
        eth0?.addresses.filter((x) => x.family === 'inet'),
        [{ family: 'inet', local: '10.0.0.5', prefixlen: 32 }],
      );
      assert.equal(eth0?.mtu, 9001);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), ['1536 10.0.0.5 - 2', '512 all 10.0.0.5 254']);
    },
  },
  {
    name: 'a host veth name that exists fails the create at its first step and is left alone',
    async run(h) {
      const [first, second] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(first, a);
      // Same key, so the same host veth name, built into another namespace with another address.
      await assert.rejects(h.dataplane.create(second, plan('c-a', '10.0.0.6')), /File exists/);
      assert.deepEqual(await problems(h, first, a), []);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.6'), []);
    },
  },
  {
    name: 'a failure mid-create removes what this create made and keeps what it did not',
    async run(h) {
      const netns = await h.pod();
      const theirs = { priority: 1536, from: '10.0.0.5/32', table: 2 };
      await h.byHand(NODE, [{ op: 'ruleAdd', rule: theirs }]);
      const a = plan('c-a', '10.0.0.5');
      await assert.rejects(h.dataplane.create(netns, a), (err: unknown) => {
        assert.ok(err instanceof DataplaneError);
        assert.equal(err.step, 'rule add from 10.0.0.5/32 lookup 2 prio 1536');
        assert.match(err.kernelMessage, /File exists/);
        assert.equal(err.hostVeth, hostVeth(a));
        return true;
      });
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), ['1536 10.0.0.5 - 2']);
      assert.deepEqual(node.snatElements, []);
      const pod = await h.dataplane.observePod(netns);
      assert.ok(pod.reachable);
      assert.equal(
        pod.links.find((l) => l.ifname === 'eth0'),
        undefined,
      );
    },
  },
  {
    name: 'a create needing the SNAT set before the node is set up fails and leaves nothing behind',
    nodeSetUp: false,
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await assert.rejects(h.dataplane.create(netns, a), /No such file or directory/);
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
    },
  },
  {
    name: 'remove removes exactly the given resources, and a second time succeeds',
    async run(h) {
      const [pa, pb] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      const b = plan('c-b', '10.0.0.6');
      await h.dataplane.create(pa, a);
      await h.dataplane.create(pb, b);
      await h.dataplane.remove(a);
      await h.dataplane.remove(a);
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
      assert.deepEqual(node.snatElements, ['10.0.0.6']);
      assert.deepEqual(await problems(h, pb, b), []);
    },
  },
  {
    name: 'a deleted pod namespace takes the veth with it; remove then succeeds and leaves no rule or SNAT element',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(netns, a);
      await h.deleteNetns(netns);
      // The kernel destroys the namespace's veths shortly after the last reference goes.
      await until(async () => !(await h.dataplane.observeNode()).links.some((l) => l.ifname === hostVeth(a)));
      assert.deepEqual(await problems(h, netns, a), [
        'pod unreachable',
        `host veth ${hostVeth(a)} missing`,
        `host route 10.0.0.5 dev ${hostVeth(a)} missing`,
      ]);
      await h.dataplane.remove(a);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
      assert.deepEqual((await h.dataplane.observeNode()).snatElements, []);
      await assert.rejects(h.dataplane.create(netns, a), /nsenter/);
    },
  },
  {
    name: 'drift made by hand is found in plan order, in the words CHECK uses',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      const veth = hostVeth(a);
      await h.dataplane.create(netns, a);
      await h.byHand(NODE, [
        { op: 'ruleDel', rule: { priority: 1536, from: '10.0.0.5/32', table: 2 } },
        { op: 'snatDel', ip: '10.0.0.5' },
      ]);
      assert.deepEqual(await problems(h, netns, a), [
        'rule from 10.0.0.5 lookup 2 prio 1536 missing',
        'snat element 10.0.0.5 missing',
      ]);
      // Removing the pod's only address takes its routes and neighbour; a downed link its routes.
      await h.byHand({ side: 'pod', path: netns }, [{ op: 'addrDel', dev: 'eth0', cidr: '10.0.0.5/32' }]);
      await h.setLinkDown(NODE, veth);
      assert.deepEqual(await problems(h, netns, a), [
        `host veth ${veth} down`,
        'address 10.0.0.5/32 missing on eth0',
        'route 169.254.1.1 dev eth0 missing',
        'route default via 169.254.1.1 dev eth0 missing',
        'neighbour 169.254.1.1 missing',
        `host route 10.0.0.5 dev ${veth} missing`,
        'rule from 10.0.0.5 lookup 2 prio 1536 missing',
        'snat element 10.0.0.5 missing',
      ]);
    },
  },
  {
    name: 'repair restores what drift took; a missing veth can only be built again',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      const veth = hostVeth(a);
      await h.dataplane.create(netns, a);
      await h.byHand(NODE, [{ op: 'ruleDel', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } }]);
      await h.byHand({ side: 'pod', path: netns }, [{ op: 'addrDel', dev: 'eth0', cidr: '10.0.0.5/32' }]);
      await h.setLinkDown(NODE, veth);
      const seen = await h.dataplane.inspect(netns, a);
      await h.dataplane.repair(netns, seen.findings);
      assert.deepEqual(await problems(h, netns, a), []);
      await h.byHand(NODE, [{ op: 'linkDel', dev: veth }]);
      const gone = await h.dataplane.inspect(netns, a);
      assert.ok(gone.findings.some((f) => f.repair === undefined));
      await assert.rejects(h.dataplane.repair(netns, gone.findings), /missing/);
      await h.dataplane.remove(a);
      await h.dataplane.create(netns, a);
      assert.deepEqual(await problems(h, netns, a), []);
    },
  },
  {
    name: 'setupEni finds the link by MAC, configures it idempotently and refuses an unknown MAC',
    async run(h) {
      await h.addNodeLink('eni1', ENI.mac);
      assert.equal(await h.dataplane.setupEni(ENI), 'eni1');
      assert.equal(await h.dataplane.setupEni(ENI), 'eni1');
      const node = await h.dataplane.observeNode();
      const link = node.links.find((l) => l.ifname === 'eni1');
      assert.ok(link?.flags.includes('UP'));
      assert.equal(link?.mtu, 9001);
      assert.ok(link?.addresses.some((x) => x.local === '10.0.1.10' && x.prefixlen === 32));
      assert.deepEqual(
        node.routes
          .filter((r) => r.table === 2)
          .map((r) => `${r.dst} ${r.gateway ?? '-'} ${r.dev}`)
          .sort(),
        ['10.0.1.1 - eni1', 'default 10.0.1.1 eni1'],
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), ['1536 10.0.1.10 - 2']);
      await assert.rejects(h.dataplane.setupEni({ ...ENI, mac: '02:0e:0e:00:00:99' }), /no link has MAC/);
    },
  },
  {
    name: 'teardownEni undoes exactly what setupEni made, twice, keeps another ENI and refuses the primary',
    async run(h) {
      const other: EniLinkSpec = {
        ...ENI,
        mac: '02:0e:0e:00:00:02',
        deviceNumber: 2,
        primaryIp: '10.0.1.11',
        routeTable: 3,
      };
      await h.addNodeLink('eni1', ENI.mac);
      await h.addNodeLink('eni2', other.mac);
      await h.dataplane.setupEni(ENI);
      await h.dataplane.setupEni(other);
      for (let i = 0; i < 2; i++) {
        await h.dataplane.teardownEni(ENI);
        const node = await h.dataplane.observeNode();
        assert.deepEqual(
          node.routes.filter((r) => r.table === 2),
          [],
        );
        assert.equal(node.routes.filter((r) => r.table === 3).length, 2, 'another ENI keeps its table');
        assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), []);
        assert.deepEqual(await nodeRulesFor(h, '10.0.1.11'), ['1536 10.0.1.11 - 3']);
        const link = node.links.find((l) => l.ifname === 'eni1');
        assert.deepEqual(
          link?.addresses.filter((x) => x.family === 'inet'),
          [],
        );
      }
      await assert.rejects(h.dataplane.teardownEni({ ...ENI, deviceNumber: 0, routeTable: 254 }), /refusing/);
    },
  },
  {
    name: "GC finds exactly what looks like vpcnet's and no record owns, and collects only that",
    async run(h) {
      const [pa, pb] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      const forgotten = plan('c-b', '10.0.0.6');
      await h.dataplane.create(pa, a);
      await h.dataplane.create(pb, forgotten);
      await h.byHand(NODE, [
        { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.7/32', table: 254 } },
        { op: 'ruleAdd', rule: { priority: 1536, from: '10.0.1.10/32', table: 2 } },
        { op: 'snatAdd', ip: '10.0.0.8' },
      ]);
      const owned = new Set(a.map(identityOf));
      const orphans = findOrphans(await h.dataplane.observeNode(), {
        vethPrefix: 'vpc',
        owns: (id) => owned.has(id),
        protectedAddresses: new Set(['10.0.1.10']),
      });
      assert.deepEqual(orphans.map((o) => o.identity).sort(), [
        'rule 1536 10.0.0.6/32 - - 2',
        'rule 512 - 10.0.0.6/32 - 254',
        'rule 512 - 10.0.0.7/32 - 254',
        'snat 10.0.0.6',
        'snat 10.0.0.8',
        `veth ${hostVeth(forgotten)}`,
      ]);
      await h.dataplane.collect(orphans);
      assert.deepEqual(await problems(h, pa, a), []);
      const left = findOrphans(await h.dataplane.observeNode(), {
        vethPrefix: 'vpc',
        owns: (id) => owned.has(id),
        protectedAddresses: new Set(['10.0.1.10']),
      });
      assert.deepEqual(left, []);
      assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), ['1536 10.0.1.10 - 2']);
    },
  },
];
