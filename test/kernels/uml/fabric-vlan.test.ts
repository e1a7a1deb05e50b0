// Branch ENIs through the fabric in 'vlan' trunk mode: 802.1q-tagged frames on the trunk's link,
// demultiplexed by VLAN sub-interfaces, as in the real VPC. Suites in test/kernels/uml/ run inside
// User-Mode Linux (test/kernels/uml.test.ts starts them there; by hand:
//   scripts/run-in-uml.sh -- node --import tsx --test test/kernels/uml/fabric-vlan.test.ts).
// On a kernel without 802.1q this suite fails saying why: the vlan mode must have been tested.
import { branchFabricSuite } from '../../lab/branch-fabric-suite.ts';
import { vlanRefusal } from '../../netns-fixture.ts';

const refusal = await vlanRefusal();
if (refusal !== undefined) {
  throw new Error(
    `this kernel has no 802.1q VLAN devices (${refusal}): run test/kernels/uml/ suites under scripts/run-in-uml.sh`,
  );
}
branchFabricSuite('vlan');
