// The scenario table's harness on the fake kernel, with either trunk driver.
import type { TrunkDriver } from '../../plan/kernel-op.ts';
import { Dataplane } from '../dataplane.ts';
import type { Namespace } from '../kernel.ts';
import { FakeKernel } from './fake-kernel.ts';
import { type Harness, SCENARIO_VPC } from './scenarios.ts';

export async function fakeHarness(
  nodeSetUp = true,
  trunkDriver: TrunkDriver = 'vlan',
): Promise<Harness & { kernel: FakeKernel }> {
  const kernel = new FakeKernel();
  const dataplane = new Dataplane(kernel);
  if (nodeSetUp) await dataplane.setupNode(SCENARIO_VPC);
  let pods = 0;
  const name = (ns: Namespace) => (ns.side === 'node' ? 'node' : ns.path);
  return {
    kernel,
    dataplane,
    trunkDriver,
    async pod() {
      const path = `/var/run/netns/fake-pod-${++pods}`;
      kernel.ns(path);
      return path;
    },
    async deleteNetns(path) {
      kernel.deleteNetns(path);
    },
    async addNodeLink(linkName, mac) {
      kernel.addLink(linkName, mac);
    },
    async setLinkDown(ns, dev) {
      kernel.setLinkDown(dev, name(ns));
    },
    async byHand(ns, ops) {
      const r = await kernel.run(ns, ops, 'stop');
      if (!r.entered || r.failures.length > 0)
        throw new Error(`by hand in ${name(ns)}: ${JSON.stringify(r)}`);
    },
  };
}
