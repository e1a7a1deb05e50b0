// Branch ENIs through the fabric in 'vlan' trunk mode: 802.1q-tagged frames on the trunk's link,
// demultiplexed by VLAN sub-interfaces, as in the real VPC. This machine's kernel has no 8021q;
// run it under User-Mode Linux, which has:
//   ../shared/tools/uml/run-in-uml.sh -- node --import tsx --test test/fabric-vlan.test.ts
// Without 802.1q it skips itself, saying why, except under CI=true, where it fails saying why.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { runCommand } from '../src/lab/command.ts';
import { branchFabricSuite } from './branch-fabric-suite.ts';

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

const NO_8021Q =
  'this kernel has no 802.1q VLAN devices; run this suite under ../shared/tools/uml/run-in-uml.sh';

if (await kernelHas8021q()) {
  branchFabricSuite('vlan');
} else {
  describe('branch ENIs through the fabric in vlan mode', () => {
    // Under CI a missing 8021q is a failure, not a skip: the vlan driver must have been tested.
    const options = process.env.CI === 'true' ? {} : { skip: NO_8021Q };
    test('needs a kernel with 802.1q VLAN devices', options, () => {
      assert.fail(NO_8021Q);
    });
  });
}
