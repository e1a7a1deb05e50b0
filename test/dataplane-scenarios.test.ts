// The dataplane's scenario table (src/dataplane/testing/scenarios.ts) against the real kernel: the
// same assertions the fake kernel passes in src/dataplane/dataplane.test.ts. Each scenario gets its
// own node namespace (the node side runs there through hostNetns) and pod namespaces, all removed
// afterwards, also on failure.
import { test } from 'node:test';
import { Dataplane } from '../src/dataplane/dataplane.ts';
import type { Namespace } from '../src/dataplane/kernel.ts';
import { LinuxKernel } from '../src/dataplane/linux/linux-kernel.ts';
import { type Harness, SCENARIO_VPC, scenarios } from '../src/dataplane/testing/scenarios.ts';
import { mustExecIn, netnsPath, netnsTracker, plantEniLink, removeNetns } from './netns-fixture.ts';

async function linuxHarness(
  create: (prefix: string) => Promise<string>,
  nodeSetUp: boolean,
): Promise<Harness> {
  const node = await create('vpcsc-node-');
  const kernel = new LinuxKernel({ hostNetns: netnsPath(node) });
  const dataplane = new Dataplane(kernel);
  if (nodeSetUp) await dataplane.setupNode(SCENARIO_VPC);
  const nsName = (ns: Namespace) => (ns.side === 'node' ? node : (ns.path.split('/').pop() ?? ''));
  return {
    dataplane,
    pod: async () => netnsPath(await create('vpcsc-pod-')),
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

for (const s of scenarios) {
  test(`linux kernel: ${s.name}`, async () => {
    const tracker = netnsTracker();
    try {
      await s.run(await linuxHarness((p) => tracker.create(p), s.nodeSetUp ?? true));
    } finally {
      await tracker.removeAll();
    }
  });
}
