import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandFailed } from '../../infra/process.ts';
import type { FabricEni } from '../api.ts';
import { branchCounterName, branchLinkName, TrunkBranches, type TrunkDriver } from './trunk-branches.ts';

const TRUNK: FabricEni = {
  eniId: 'eni-0aaaaaaaaaaaa1111',
  mac: '02:00:00:00:00:01',
  primaryIp: '10.0.0.5',
  subnetCidr: '10.0.0.0/20',
  gateway: '10.0.0.1',
};
const BRANCH: FabricEni = {
  eniId: 'eni-0bbbbbbbbbbbb2222',
  mac: '02:00:00:00:00:02',
  primaryIp: '10.0.0.9',
  subnetCidr: '10.0.0.0/20',
  gateway: '10.0.0.1',
};

/** The failure a command the kernel refused raises. */
function kernelSaid(argv: string[], stderr: string): CommandFailed {
  return new CommandFailed(argv, { code: 1, stdout: '', stderr });
}

function recording(mode: TrunkDriver, fail?: (line: string) => string | undefined) {
  const calls: string[] = [];
  const branches = new TrunkBranches({
    vpcNetns: 'L-vpc',
    mode,
    ip: async (netns, lines) => {
      for (const l of lines) {
        calls.push(`${netns} ${l}`);
        const stderr = fail?.(l);
        if (stderr !== undefined) throw kernelSaid(['ip', '-batch', '-'], stderr);
      }
    },
    sysctl: async (netns, settings) => {
      for (const [k, v] of Object.entries(settings)) calls.push(`${netns} sysctl ${k}=${v}`);
    },
    run: async (argv, input) => {
      calls.push(`${argv.join(' ')}\n${input?.stdin ?? ''}`.trim());
      const stderr = fail?.(input?.stdin ?? '');
      if (stderr !== undefined) throw kernelSaid(['nft', '-f', '-'], stderr);
      return { code: 0, stdout: '', stderr: '' };
    },
  });
  return { branches, calls };
}

test('names of a branch sub-interface and counter come from its ENI id and fit IFNAMSIZ', () => {
  assert.equal(branchLinkName(BRANCH.eniId), 'bbbbbbbbb2222');
  assert.ok(branchLinkName(BRANCH.eniId).length <= 15);
  assert.equal(branchCounterName(BRANCH.eniId), 'branch_bbbbbbbb2222');
});

test("'vlan' mode: a VLAN sub-interface of the trunk link with the gateway, proxy ARP, the branch route and neighbour", async () => {
  const { branches, calls } = recording('vlan');
  await branches.associated(TRUNK, 7, BRANCH);
  const sub = branchLinkName(BRANCH.eniId);
  assert.deepEqual(calls, [
    `L-vpc link add link vaaaaaaaa1111 name ${sub} type vlan id 7`,
    `L-vpc addr replace 10.0.0.1/32 dev ${sub}`,
    `L-vpc sysctl net.ipv4.conf.${sub}.proxy_arp=1`,
    `L-vpc sysctl net.ipv4.neigh.${sub}.proxy_delay=0`,
    `L-vpc link set ${sub} up`,
    `L-vpc route replace 10.0.0.9/32 dev ${sub}`,
    `L-vpc neigh replace 10.0.0.9 lladdr 02:00:00:00:00:02 dev ${sub} nud permanent`,
  ]);
  calls.length = 0;
  await branches.disassociated(TRUNK, 7, BRANCH);
  assert.deepEqual(calls, [`L-vpc link del ${sub}`]);
});

test("'vlan' mode on a kernel without 8021q fails saying so and naming 'macvlan'", async () => {
  const { branches } = recording('vlan', (l) =>
    l.includes('type vlan') ? 'Error: Unknown device type.' : undefined,
  );
  await assert.rejects(
    branches.associated(TRUNK, 7, BRANCH),
    /needs 802\.1q VLAN devices.*use trunk mode 'macvlan'/,
  );
});

test("'vlan' mode: a failure after the sub-interface exists removes it again", async () => {
  const { branches, calls } = recording('vlan', (l) =>
    l.startsWith('route replace') ? 'RTNETLINK answers: Invalid argument' : undefined,
  );
  await assert.rejects(branches.associated(TRUNK, 7, BRANCH), /Invalid argument/);
  assert.equal(calls.at(-1), `L-vpc link del ${branchLinkName(BRANCH.eniId)}`);
});

test("'macvlan' mode: a per-MAC nft counter on the trunk link's ingress, the branch route and neighbour on the trunk link", async () => {
  const { branches, calls } = recording('macvlan');
  await branches.associated(TRUNK, 3, BRANCH);
  const counter = branchCounterName(BRANCH.eniId);
  assert.equal(calls.length, 3);
  assert.match(calls[0]!, /^ip netns exec L-vpc nft -f -\n/);
  assert.match(
    calls[0]!,
    /add chain netdev vpcnet_fabric ingress_vaaaaaaaa1111 \{ type filter hook ingress device "vaaaaaaaa1111" priority 0; \}/,
  );
  assert.match(
    calls[0]!,
    /add rule netdev vpcnet_fabric ingress_vaaaaaaaa1111 counter name ether saddr map @branch_counters/,
  );
  assert.match(
    calls[0]!,
    new RegExp(`add element netdev vpcnet_fabric branch_counters \\{ 02:00:00:00:00:02 : "${counter}" \\}`),
  );
  assert.deepEqual(calls.slice(1), [
    'L-vpc route replace 10.0.0.9/32 dev vaaaaaaaa1111',
    'L-vpc neigh replace 10.0.0.9 lladdr 02:00:00:00:00:02 dev vaaaaaaaa1111 nud permanent',
  ]);
  calls.length = 0;
  await branches.disassociated(TRUNK, 3, BRANCH);
  assert.deepEqual(calls.slice(0, 2), [
    'L-vpc route del 10.0.0.9/32 dev vaaaaaaaa1111',
    'L-vpc neigh del 10.0.0.9 dev vaaaaaaaa1111',
  ]);
  assert.match(calls[2]!, /delete element netdev vpcnet_fabric branch_counters \{ 02:00:00:00:00:02 \}/);
  assert.match(calls[3]!, new RegExp(`delete counter netdev vpcnet_fabric ${counter}`));
  calls.length = 0;
  await branches.trunkDetached(TRUNK);
  assert.match(calls[0] ?? '', /delete chain netdev vpcnet_fabric ingress_vaaaaaaaa1111/);
});

test("'macvlan' mode: removing what is already gone succeeds; another nft failure does not", async () => {
  const gone = recording('macvlan', (s) =>
    s.startsWith('delete')
      ? '/dev/stdin:1:1-2: Error: Could not process rule: No such file or directory\ndelete x\n^^'
      : undefined,
  );
  await gone.branches.disassociated(TRUNK, 3, BRANCH);
  const broken = recording('macvlan', (s) =>
    s.startsWith('delete')
      ? '/dev/stdin:1:1-2: Error: Could not process rule: Operation not permitted'
      : undefined,
  );
  await assert.rejects(broken.branches.disassociated(TRUNK, 3, BRANCH), /Operation not permitted/);
});
