// The dataplane's scenario table (src/dataplane/testing/scenarios.ts) against the real kernel: the
// same assertions the fake kernel passes in src/dataplane/dataplane.test.ts. Each scenario gets its
// own node namespace (the node side runs there through hostNetns) and pod namespaces, all removed
// afterwards, also on failure. This kernel has no 802.1q: branch devices use the macvlan driver.
import { test } from 'node:test';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { type Harness, SCENARIO_VPC, scenarios } from '../../src/dataplane/testing/scenarios.ts';
import { netnsPath, netnsTracker } from '../netns-fixture.ts';
import { kernelHarness } from './scenario-harness.ts';

async function linuxHarness(
  create: (prefix: string) => Promise<string>,
  nodeSetUp: boolean,
): Promise<Harness> {
  const node = await create('vpcsc-node-');
  const kernel = new IpCliKernel({ hostNetns: netnsPath(node) });
  const h = kernelHarness(kernel, node, create, 'vpcsc-pod-', 'macvlan');
  if (nodeSetUp) await h.dataplane.setupNode(SCENARIO_VPC);
  return h;
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
