// The reconcile loop over IPv6 pods (ENABLE_IPv6): drift repaired in place, a lost IPv4 egress veth
// rebuilt with the same addresses, and an unrecorded IPv6 pod's two veths collected.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Attachment } from '../plan/attachment.ts';
import { egressVethName, planIpv6Pod } from '../plan/ipv6-pod-plan.ts';
import { hostVethName } from '../plan/names.ts';
import { kernelState } from './testing/comparable-state.ts';
import { type World, world } from './testing/reconcile-world.ts';

async function attachIpv6(
  w: World,
  containerId: string,
  ip: string,
  egress: string,
  record = true,
): Promise<Attachment> {
  const key = { network: 'vpcnet', containerId, ifName: 'eth0' };
  const resources = planIpv6Pod({
    key,
    vethPrefix: 'vpc',
    ip,
    eniId: 'eni-primary',
    mtu: 9001,
    v4EgressIp: egress,
  });
  const netns = `/var/run/netns/${containerId}`;
  await w.dp.create(netns, resources);
  const att: Attachment = {
    key,
    pod: { namespace: 'default', name: containerId },
    netns,
    createdAt: 0,
    resources,
  };
  if (record) w.ledger.put(att);
  return att;
}

test('an IPv6 pod: a lost /128 route and gateway neighbour are restored in place', async () => {
  const w = await world();
  const att = await attachIpv6(w, 'c6', '2001:db8::5', '169.254.172.2');
  const healthy = kernelState(w.kernel);
  w.kernel.deleteRoute('node', '2001:db8::5');
  w.kernel.deleteNeighbour(att.netns, 'eth0', 'fe80::1');
  const report = await w.reconciler.runOnce();
  assert.deepEqual(report.repaired[0]?.fixed, [
    'neighbour fe80::1 missing',
    `host route 2001:db8::5 dev ${hostVethName(att.key, 'vpc')} metric 1024 missing`,
  ]);
  assert.equal(report.repaired[0]?.rebuilt, false);
  assert.deepEqual(report.collected, []);
  assert.equal(kernelState(w.kernel), healthy);
});

test("an IPv6 pod's lost egress veth makes the pass rebuild its network with the same addresses", async () => {
  const w = await world();
  const att = await attachIpv6(w, 'c6', '2001:db8::5', '169.254.172.2');
  const healthy = kernelState(w.kernel);
  w.kernel.deleteLink(egressVethName(att.key, 'vpc'));
  const report = await w.reconciler.runOnce();
  assert.equal(report.repaired[0]?.rebuilt, true);
  assert.deepEqual(await w.problems(att), []);
  assert.equal(kernelState(w.kernel), healthy);
});

test("an unrecorded IPv6 pod's two veths are collected, a recorded one's are not", async () => {
  const w = await world();
  const kept = await attachIpv6(w, 'c6', '2001:db8::5', '169.254.172.2');
  const orphan = await attachIpv6(w, 'c7', '2001:db8::6', '169.254.172.3', false);
  const report = await w.reconciler.runOnce();
  assert.deepEqual(
    [...report.collected].sort(),
    [`veth ${egressVethName(orphan.key, 'vpc')}`, `veth ${hostVethName(orphan.key, 'vpc')}`].sort(),
  );
  assert.deepEqual(await w.problems(kept), []);
});
