import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { heldEgressAddresses, V4_EGRESS_RANGE } from '../egress-addresses.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { cniRequest, ipOf } from '../testing/cni-request.ts';
import { ignoredInIpv6Mode } from './ipv6-addressing.ts';

const worlds = agentWorlds();
const IPV6_MODE = { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' };
const IPV4_GROWTH = ['assignPrivateIps', 'assignIpv4Prefixes', 'createEni', 'attachEni'];

interface Ipv6PoolSection {
  readonly ipv6?: { prefix: string | null; problem: string | null };
}

test('an IPv6 agent holds one /80 on the primary ENI, shows it in its state, and grows no IPv4 pool', async () => {
  const w = await worlds.world(IPV6_MODE, { ipv6Subnet: '2001:db8:5e00:0' });
  const agent = await w.start();
  try {
    const prefixes = w.cloud.enis.get('eni-primary')?.ipv6Prefixes ?? [];
    assert.equal(prefixes.length, 1);
    const pool = agent.introspect().pool as Ipv6PoolSection;
    assert.equal(pool.ipv6?.prefix, prefixes[0]);
    assert.equal(pool.ipv6?.problem, null);
    assert.deepEqual(
      w.cloud.calls.filter((c) => IPV4_GROWTH.some((m) => c.startsWith(`${m} `))),
      [],
    );
  } finally {
    await agent.stop();
  }
  const again = await w.start();
  try {
    assert.equal(
      w.cloud.calls.filter((c) => c.startsWith('assignIpv6Prefixes')).length,
      1,
      'the /80 is adopted',
    );
  } finally {
    await again.stop();
  }
});

test('an IPv6 agent on an IPv4-only subnet starts and says why pods get no address', async () => {
  const w = await worlds.world(IPV6_MODE, {});
  const agent = await w.start();
  try {
    const pool = agent.introspect().pool as Ipv6PoolSection;
    assert.match(pool.ipv6?.problem ?? '', /has no IPv6 CIDR block/);
  } finally {
    await agent.stop();
  }
});

test('IPv6 mode names each IPv4 pool setting it ignores', () => {
  assert.deepEqual(ignoredInIpv6Mode({ WARM_IP_TARGET: '5', MINIMUM_IP_TARGET: '10', VPCNET_MTU: '9001' }), [
    'WARM_IP_TARGET',
    'MINIMUM_IP_TARGET',
  ]);
  assert.deepEqual(
    ignoredInIpv6Mode({
      ENABLE_V6_EGRESS: 'true',
      AWS_EXTERNAL_SERVICE_CIDRS: '198.51.100.0/24',
      POD_MTU: '1500',
    }),
    ['ENABLE_V6_EGRESS', 'AWS_EXTERNAL_SERVICE_CIDRS'],
  );
});

/** An IPv6 agent's world with three pods started (old0..old2), the agent stopped and its ledger gone. */
async function ipv6PodsThenLedgerLost() {
  const w = await worlds.world(IPV6_MODE, { ipv6Subnet: '2001:db8:5e00:0' });
  const first = await w.start();
  const old: string[] = [];
  const oldEgress: string[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const out = await first.cni(
        cniRequest('ADD', `old${i}`, await w.netns(`old${i}`), `old${i}`, `uo${i}`),
      );
      assert.equal(out.exitCode, 0, out.stdout);
      old.push(ipOf(out.stdout));
    }
    oldEgress.push(...heldEgressAddresses(V4_EGRESS_RANGE, first.ledger.list()));
  } finally {
    await first.stop();
  }
  assert.equal(oldEgress.length, 3);
  await rm(join(w.dir, 'state', 'ledger.json'));
  return { w, old, oldEgress };
}

test('with the ledger lost and IPv6 pods running, recovery holds their addresses: a new pod never gets one', async () => {
  const { w, old, oldEgress } = await ipv6PodsThenLedgerLost();
  const agent = await w.start();
  try {
    // Each pod's two host routes are evidence: its IPv6 address and its egress veth's IPv4 one.
    assert.deepEqual(
      agent.ledger
        .recovered()
        .map((r) => r.ip)
        .sort(),
      [...oldEgress, ...old].sort(),
    );
    assert.equal((agent.introspect().pool as { ipv6?: { assigned: number } }).ipv6?.assigned, 3);
    const out = await agent.cni(cniRequest('ADD', 'new0', await w.netns('new0'), 'new0', 'un0'));
    assert.equal(out.exitCode, 0, out.stdout);
    assert.ok(!old.includes(ipOf(out.stdout)), "a live pod's address was handed out again");
    const [newEgress] = heldEgressAddresses(V4_EGRESS_RANGE, agent.ledger.list());
    assert.ok(
      newEgress !== undefined && !oldEgress.includes(newEgress),
      `egress ${newEgress} is a live pod's`,
    );
    // The DEL of a recovered pod lets go of both its records: its IPv6 veth's and its egress veth's.
    const del = await agent.cni(cniRequest('DEL', 'old0', await w.netns('old0'), 'old0', 'uo0'));
    assert.equal(del.exitCode, 0, del.stdout);
    assert.equal(agent.ledger.recovered().length, 4);
    assert.ok(!agent.ledger.recovered().some((r) => r.ip === old[0] || r.ip === oldEgress[0]));
  } finally {
    await agent.stop();
  }
});

test('with the ledger lost and EC2 failing at that start, the pods found in the kernel are still held once the /80 is read', async () => {
  const { w, old } = await ipv6PodsThenLedgerLost();
  w.cloud.failNext('describeInstanceEnis');
  const agent = await w.start();
  try {
    const pool = () =>
      (agent.introspect().pool as { ipv6?: { prefix: string | null; assigned: number } }).ipv6;
    assert.equal(pool()?.prefix, null, 'the /80 could not be read at this start');
    const out = await agent.cni(cniRequest('ADD', 'new0', await w.netns('new0'), 'new0', 'un0'));
    assert.equal(out.exitCode, 0, out.stdout);
    assert.ok(pool()?.prefix, 'the waiting ADD read the /80');
    assert.ok(!old.includes(ipOf(out.stdout)), "a live pod's address was handed out again");
    assert.equal(pool()?.assigned, 4);
  } finally {
    await agent.stop();
  }
});
