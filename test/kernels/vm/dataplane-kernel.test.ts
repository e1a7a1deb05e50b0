// The dataplane scenario table on Debian 12's stock kernel, the one production nodes run, through
// the netlink helper (bin/vpcnet-netlink) with the node's SNAT table in nf_tables and branch devices
// made by the production trunk driver, 802.1q `vlan`: what neither this machine's kernel (no
// 802.1q) nor User-Mode Linux (no nf_tables) can show. Suites in test/kernels/vm/ run inside the VM
// (test/kernels/vm.test.ts starts them there; by hand:
//   scripts/run-in-vm.sh -- node --import tsx --test test/kernels/vm/dataplane-kernel.test.ts).
// On a kernel without 802.1q this suite fails saying why: the vlan driver must have been tested.
import { release } from 'node:os';
import { describe, test } from 'node:test';
import { scenarios } from '../../../src/dataplane/testing/scenarios.ts';
import { vlanRefusal } from '../../netns-fixture.ts';
import { runNetlinkScenario } from '../scenario-harness.ts';

const refusal = await vlanRefusal();
if (refusal !== undefined) {
  throw new Error(
    `kernel ${release()} cannot make 802.1q VLAN devices (${refusal}): run test/kernels/vm/ suites in the VM (scripts/run-in-vm.sh, test/kernels/vm.test.ts)`,
  );
}

describe(`Linux ${release()}, netlink helper, vlan trunk`, () => {
  for (const s of scenarios) {
    test(`netlink kernel, vlan trunk: ${s.name}`, () => runNetlinkScenario(s, 'vm9-', 'vlan'));
  }
});
