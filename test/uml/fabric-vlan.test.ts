// Branch ENIs through the fabric in 'vlan' trunk mode: 802.1q-tagged frames on the trunk's link,
// demultiplexed by VLAN sub-interfaces, as in the real VPC. Suites in test/uml/ run inside
// User-Mode Linux (test/uml.test.ts starts them there; by hand:
//   scripts/run-in-uml.sh -- node --import tsx --test test/uml/fabric-vlan.test.ts).
// On a kernel without 802.1q this suite fails saying why: the vlan mode must have been tested.
import { randomBytes } from 'node:crypto';
import { runCommand } from '../../src/lab/command.ts';
import { branchFabricSuite } from '../branch-fabric-suite.ts';

/** Whether this kernel can make a VLAN device (probed inside a namespace of our own). */
async function kernelHas8021q(): Promise<boolean> {
  const ns = `vpclq${randomBytes(3).toString('hex')}`;
  await runCommand('ip', ['netns', 'add', ns]);
  try {
    await runCommand('ip', ['-n', ns, 'link', 'add', 'name', 'p0', 'type', 'veth', 'peer', 'name', 'p1']);
    await runCommand('ip', [
      '-n',
      ns,
      'link',
      'add',
      'link',
      'p0',
      'name',
      'p0.7',
      'type',
      'vlan',
      'id',
      '7',
    ]);
    return true;
  } catch {
    return false;
  } finally {
    await runCommand('ip', ['netns', 'del', ns]);
  }
}

if (!(await kernelHas8021q())) {
  throw new Error('this kernel has no 802.1q VLAN devices: run test/uml/ suites under scripts/run-in-uml.sh');
}
branchFabricSuite('vlan');
