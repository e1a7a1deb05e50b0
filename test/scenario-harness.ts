// The dataplane scenario table's harness on the real kernel, for any driver: the node is a network
// namespace of the test's own, pods are namespaces made with `podPrefix`, and "by hand" changes go
// through the driver under test (test/dataplane-scenarios.test.ts, test/dataplane-netlink.test.ts).
import { Dataplane } from '../src/dataplane/dataplane.ts';
import type { Kernel, Namespace } from '../src/dataplane/kernel.ts';
import type { Harness } from '../src/dataplane/testing/scenarios.ts';
import { mustExecIn, netnsPath, plantEniLink, removeNetns } from './netns-fixture.ts';

export function kernelHarness(
  kernel: Kernel,
  node: string,
  create: (prefix: string) => Promise<string>,
  podPrefix: string,
): Harness {
  const nsName = (ns: Namespace) => (ns.side === 'node' ? node : (ns.path.split('/').pop() ?? ''));
  return {
    dataplane: new Dataplane(kernel),
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
