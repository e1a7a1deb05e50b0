import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FabricEni } from '../api.ts';
import { vpcLinkName } from './link-names.ts';
import { TrafficCounters } from './traffic-counters.ts';
import { branchCounterName, branchLinkName, type TrunkDriver } from './trunk-branches.ts';

function eni(eniId: string): FabricEni {
  return {
    eniId,
    mac: '02:00:00:00:00:00',
    primaryIp: '10.0.0.9',
    subnetCidr: '10.0.0.0/20',
    gateway: '10.0.0.1',
  };
}
const PRIMARY = eni('eni-0000000000000aaaa');
const TRUNK = eni('eni-0000000000000bbbb');
const BRANCH = eni('eni-0000000000000cccc');

/** A kernel whose counters the test sets. */
function kernel(mode: TrunkDriver) {
  const links = new Map<string, number>();
  const counters = new Map<string, number>();
  const traffic = new TrafficCounters({
    vpcNetns: 'L-vpc',
    mode,
    run: async (argv) => {
      const stdout = argv.includes('link')
        ? JSON.stringify([...links].map(([ifname, packets]) => ({ ifname, stats64: { rx: { packets } } })))
        : JSON.stringify({
            nftables: [
              { metainfo: {} },
              ...[...counters].map(([name, packets]) => ({ counter: { name, packets } })),
            ],
          });
      return { code: 0, stdout, stderr: '' };
    },
  });
  return { links, counters, traffic };
}

test("'vlan' mode: a branch counts its sub-interface's rx; the trunk only frames that were not its branches'", async () => {
  const k = kernel('vlan');
  k.links.set(vpcLinkName(PRIMARY.eniId), 4);
  k.links.set(vpcLinkName(TRUNK.eniId), 15);
  k.links.set(branchLinkName(BRANCH.eniId), 12);
  const counts = await k.traffic.read([PRIMARY, TRUNK], [{ trunk: TRUNK, vlanId: 1, branch: BRANCH }]);
  assert.deepEqual(Object.fromEntries(counts), { [BRANCH.eniId]: 12, [PRIMARY.eniId]: 4, [TRUNK.eniId]: 3 });
});

test("'macvlan' mode: a branch counts its nft counter by source MAC", async () => {
  const k = kernel('macvlan');
  k.links.set(vpcLinkName(TRUNK.eniId), 10);
  k.counters.set(branchCounterName(BRANCH.eniId), 7);
  const counts = await k.traffic.read([TRUNK], [{ trunk: TRUNK, vlanId: 1, branch: BRANCH }]);
  assert.deepEqual(Object.fromEntries(counts), { [BRANCH.eniId]: 7, [TRUNK.eniId]: 3 });
});

test("a removed branch's frames stay off its trunk's count, so the trunk's count never goes backwards", async () => {
  const k = kernel('macvlan');
  k.links.set(vpcLinkName(TRUNK.eniId), 10);
  k.counters.set(branchCounterName(BRANCH.eniId), 7);
  await k.traffic.retire(TRUNK, BRANCH);
  k.counters.clear();
  const counts = await k.traffic.read([TRUNK], []);
  assert.equal(counts.get(TRUNK.eniId), 3);
  k.traffic.forget(TRUNK.eniId);
  assert.equal((await k.traffic.read([TRUNK], [])).get(TRUNK.eniId), 10);
});
