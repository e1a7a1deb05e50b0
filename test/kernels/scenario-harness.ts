// The dataplane scenario table's harness on the real kernel, for any driver: the node is a network
// namespace of the test's own, pods are namespaces made with `podPrefix`, and "by hand" changes go
// through the driver under test (test/kernels/dataplane-scenarios.test.ts, test/kernels/dataplane-netlink.test.ts,
// test/kernels/vm/dataplane-kernel.test.ts). Branch devices use `trunkDriver`: `macvlan` on a kernel
// without 802.1q, `vlan` (production's) where it has it.
import { join } from 'node:path';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import type { Kernel, Namespace } from '../../src/dataplane/kernel.ts';
import { NetlinkKernel } from '../../src/dataplane/netlink/netlink-kernel.ts';
import { type Harness, SCENARIO_VPC, type Scenario } from '../../src/dataplane/testing/scenarios.ts';
import type { TrunkDriver } from '../../src/plan/kernel-op.ts';
import { mustExecIn, netnsPath, netnsTracker, plantEniLink, removeNetns } from '../netns-fixture.ts';

/** The netlink helper scripts/build.mjs builds. */
export const NETLINK_HELPER = join(import.meta.dirname, '..', '..', 'bin', 'vpcnet-netlink');

export function kernelHarness(
  kernel: Kernel,
  node: string,
  create: (prefix: string) => Promise<string>,
  podPrefix: string,
  trunkDriver: TrunkDriver,
): Harness {
  const nsName = (ns: Namespace) => (ns.side === 'node' ? node : (ns.path.split('/').pop() ?? ''));
  return {
    dataplane: new Dataplane(kernel),
    trunkDriver,
    pod: async () => netnsPath(await create(podPrefix)),
    deleteNetns: (path) => removeNetns(path.split('/').pop() ?? ''),
    addNodeLink: (name, mac) => plantEniLink(node, name, mac),
    async setLinkDown(ns, dev) {
      await mustExecIn(nsName(ns), ['ip', 'link', 'set', 'dev', dev, 'down']);
    },
    async byHand(ns, ops) {
      const r = await kernel.run(ns, ops, 'stop');
      if (!r.entered || r.failures.length > 0)
        throw new Error(`by hand in ${nsName(ns)}: ${JSON.stringify(r)}`);
    },
  };
}

/** Runs fn with a netlink driver whose node is `hostNetns`; its helper is ended afterwards. */
export async function withNetlinkKernel<T>(
  hostNetns: string,
  fn: (k: NetlinkKernel) => Promise<T>,
): Promise<T> {
  const kernel = new NetlinkKernel({ program: NETLINK_HELPER, hostNetns });
  try {
    return await fn(kernel);
  } finally {
    await kernel.close();
  }
}

/**
 * One scenario of the table through the netlink helper: a node namespace of its own (its SNAT table
 * set up through nft, as the agent does at start, unless the scenario says otherwise) and pod
 * namespaces, named `<prefix>node-…` and `<prefix>pod-…`, all removed afterwards, also on failure.
 */
export async function runNetlinkScenario(
  s: Scenario,
  prefix: string,
  trunkDriver: TrunkDriver,
): Promise<void> {
  const tracker = netnsTracker();
  const create = (p: string) => tracker.create(p);
  try {
    const node = await create(`${prefix}node-`);
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const h = kernelHarness(kernel, node, create, `${prefix}pod-`, trunkDriver);
      if (s.nodeSetUp ?? true) await h.dataplane.setupNode(SCENARIO_VPC);
      await s.run(h);
    });
  } finally {
    await tracker.removeAll();
  }
}
