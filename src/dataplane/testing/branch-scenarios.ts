// Scenarios of a pod with its own security groups beside a regular pod (see scenarios.ts): a branch
// binding's shared plan on the trunk, with the harness's trunk driver (802.1q `vlan` where the
// kernel has it), and the holder sandbox's own plan, as the agent's ADD and settle build them.
import assert from 'node:assert/strict';
import type { BranchBinding, EnforcingMode } from '../../plan/binding.ts';
import {
  BRANCH_TABLE_BASE,
  branchDeviceName,
  planBranchAttachment,
  planBranchShared,
} from '../../plan/branch-plan.ts';
import type { EniLinkSpec } from '../../plan/eni-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import { ENI, hostVeth, NODE, nodeRulesFor, plan, problems } from './scenario-helpers.ts';
import type { Harness, Scenario } from './scenarios.ts';

/** The trunk ENI; its link is named by the harness, set up (MTU included) as the agent sets up an ENI. */
const TRUNK_ENI: EniLinkSpec = {
  ...ENI,
  mac: '02:0e:0e:00:00:07',
  deviceNumber: 2,
  primaryIp: '10.0.1.12',
  routeTable: 3,
};
const TRUNK_DEV = 'trunk';
const BRANCH = { eniId: 'eni-0b0b0b0b0b0b0b0b7', mac: '02:0b:0b:00:00:07', ip: '10.0.2.20', vlanId: 7 };

function binding(h: Harness, mode: EnforcingMode): BranchBinding {
  return {
    key: { podUid: `uid-sg-${mode}`, eniId: BRANCH.eniId },
    pod: { namespace: 'default', name: `sg-${mode}`, uid: `uid-sg-${mode}` },
    vlanId: BRANCH.vlanId,
    mac: BRANCH.mac,
    ip: BRANCH.ip,
    subnetCidr: '10.0.2.0/24',
    gateway: '10.0.2.1',
    trunkDev: TRUNK_DEV,
    table: BRANCH_TABLE_BASE + BRANCH.vlanId,
    mode,
    driver: h.trunkDriver,
    mtu: 9001,
    resources: [],
    createdAt: 0,
  };
}

/** The sandbox's own plan and the binding's shared plan held by its veth. */
function branchPlans(h: Harness, mode: EnforcingMode): { own: Resource[]; shared: Resource[] } {
  const own = planBranchAttachment({
    key: { network: 'vpcnet', containerId: `c-sg-${mode}`, ifName: 'eth0' },
    vethPrefix: 'vpc',
    ip: BRANCH.ip,
    mtu: 9001,
  });
  return { own, shared: planBranchShared(binding(h, mode), hostVeth(own)) };
}

/** What of the binding the node still shows: its device, its table's routes, rules naming it. */
async function bindingLeftovers(h: Harness, b: BranchBinding, holderVeth: string): Promise<string[]> {
  const node = await h.dataplane.observeNode();
  const dev = branchDeviceName(b.key);
  return [
    ...node.links.filter((l) => l.ifname === dev).map((l) => `link ${l.ifname}`),
    ...node.routes
      .filter((r) => r.table === b.table || r.dev === dev || r.dev === holderVeth)
      .map((r) => `route ${r.dst} table ${r.table}`),
    ...node.rules
      .filter((r) => r.table === b.table || r.iif === dev || r.iif === holderVeth)
      .map((r) => `rule ${r.priority} table ${r.table}`),
    ...(await nodeRulesFor(h, b.ip)).map((r) => `rule ${r}`),
  ];
}

/** The node's links, routes and rules, to compare before and after. */
async function nodeShape(h: Harness): Promise<string[]> {
  const node = await h.dataplane.observeNode();
  return [
    ...node.links.map((l) => `link ${l.ifname}`),
    ...node.routes.map((r) => `route ${r.dst} dev ${r.dev ?? '-'} table ${r.table}`),
    ...node.rules.map((r) => `rule ${r.priority} table ${r.table}`),
  ].sort();
}

export const branchScenarios: readonly Scenario[] = [
  {
    name: "a branch ENI's device on the trunk and its holder sandbox live beside a regular pod; drift of the device is repaired; removal leaves only the regular pod",
    async run(h) {
      await h.addNodeLink(TRUNK_DEV, TRUNK_ENI.mac);
      assert.equal(await h.dataplane.setupEni(TRUNK_ENI), TRUNK_DEV);
      const before = await nodeShape(h);
      const regularNs = await h.pod();
      const regular = plan('c-regular', '10.0.0.5');
      await h.dataplane.create(regularNs, regular);
      for (const mode of ['strict', 'standard'] as const) {
        const b = binding(h, mode);
        const dev = branchDeviceName(b.key);
        const netns = await h.pod();
        const { own, shared } = branchPlans(h, mode);
        const whole = [...own, ...shared];
        // As an ADD does: the sandbox's own part, then the binding settled onto its veth.
        await h.dataplane.create(netns, own);
        const made = await h.dataplane.converge(shared, [], 'settle branch binding');
        assert.equal(
          made.length,
          shared.length,
          `${mode}: everything shared was missing: ${made.join('; ')}`,
        );
        assert.deepEqual(await problems(h, netns, whole), [], mode);
        assert.deepEqual(await problems(h, regularNs, regular), [], mode);
        const device = (await h.dataplane.observeNode()).links.find((l) => l.ifname === dev);
        assert.equal(device?.kind, h.trunkDriver, mode);
        assert.equal(device?.address, BRANCH.mac);
        assert.equal(device?.parent, TRUNK_DEV);
        assert.equal(device?.vlanId, h.trunkDriver === 'vlan' ? BRANCH.vlanId : undefined);
        assert.ok(device?.flags.includes('UP'));
        const pod = await h.dataplane.observePod(netns);
        assert.ok(pod.reachable);
        assert.deepEqual(
          pod.links.find((l) => l.ifname === 'eth0')?.addresses.filter((x) => x.family === 'inet'),
          [{ family: 'inet', local: BRANCH.ip, prefixlen: 32 }],
        );

        // Deleted by hand: the kernel takes the routes through it along.
        await h.byHand(NODE, [{ op: 'linkDel', dev }]);
        const drift = [
          `branch device ${dev} (VLAN ${BRANCH.vlanId} on ${TRUNK_DEV}) missing`,
          `route 10.0.2.1 dev ${dev} table ${b.table} missing`,
          `route default via 10.0.2.1 dev ${dev} table ${b.table} missing`,
        ];
        assert.deepEqual(await problems(h, netns, whole), drift, mode);
        assert.deepEqual(await h.dataplane.converge(shared, shared, 'settle branch binding'), drift, mode);
        assert.deepEqual(await problems(h, netns, whole), [], `${mode}: after the repair`);
        assert.deepEqual(
          await problems(h, regularNs, regular),
          [],
          `${mode}: the regular pod after the repair`,
        );

        // As the last sandbox's DEL does: its own part, then the binding's.
        await h.dataplane.remove(own, { netns });
        await h.dataplane.remove(shared, { operation: 'teardown of branch binding' });
        assert.deepEqual(await bindingLeftovers(h, b, hostVeth(own)), [], mode);
        assert.deepEqual((await h.dataplane.observeNode()).snatElements, ['10.0.0.5'], mode);
        assert.deepEqual(await problems(h, regularNs, regular), [], `${mode}: the regular pod is whole`);
      }
      await h.dataplane.remove(regular);
      assert.deepEqual(await nodeShape(h), before, 'the node is as it was before the pods');
      assert.deepEqual((await h.dataplane.observeNode()).snatElements, []);
    },
  },
];
