// ENABLE_V6_EGRESS through the agent in-process (fake kernel, fake cloud): on a dual-stack node the
// start sets up the SNAT of fd00::ac:0/118 to the node's IPv6 and an ADD gives the pod v6if0; on a
// node without IPv6 the pods get none; off, the table is removed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { V6_EGRESS_IF } from '../plan/v6-egress-plan.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest } from './testing/cni-request.ts';

const { world } = agentWorlds();
const ONE_ENI = { limits: { maxEnis: 1, ipsPerEni: 12 }, primarySecondaryIps: 11 };

test("on a dual-stack node, the pods' IPv6 egress is SNATed to the node's IPv6 and each pod gets v6if0", async () => {
  const w = await world({ ENABLE_V6_EGRESS: 'true' }, { ...ONE_ENI, ipv6Subnet: '2001:db8:5e00:0' });
  const agent = await w.start();
  try {
    assert.deepEqual(w.kernel.v6EgressConfig, { snatSource: '2001:db8:5e00::10', randomizeSnat: 'prng' });
    const ns = await w.netns('a');
    assert.equal((await agent.cni(cniRequest('ADD', 'c1', ns))).exitCode, 0);
    assert.ok(w.kernel.ns(ns).links.get(V6_EGRESS_IF), 'v6if0 in the pod');
    const [att] = agent.ledger.list();
    assert.ok(att?.resources.some((r) => r.kind === 'ipv6Address' && r.cidr === 'fd00::ac:2/128'));
  } finally {
    await agent.stop();
  }
});

test('on a node without IPv6, pods get no IPv6 egress (as upstream); with it off, no egress table either', async () => {
  const w = await world({ ENABLE_V6_EGRESS: 'true' }, ONE_ENI);
  const agent = await w.start();
  try {
    assert.equal(w.kernel.v6EgressConfig, undefined);
    const ns = await w.netns('a');
    assert.equal((await agent.cni(cniRequest('ADD', 'c1', ns))).exitCode, 0);
    assert.equal(w.kernel.ns(ns).links.get(V6_EGRESS_IF), undefined);
  } finally {
    await agent.stop();
  }
  const off = await world({}, { ...ONE_ENI, ipv6Subnet: '2001:db8:5e00:0' });
  off.kernel.v6EgressConfig = { snatSource: '2001:db8:5e00::10' }; // left by an earlier start
  const plain = await off.start();
  await plain.stop();
  assert.equal(off.kernel.v6EgressConfig, undefined);
});
