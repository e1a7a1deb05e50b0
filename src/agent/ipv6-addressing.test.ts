import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ignoredInIpv6Mode } from './ipv6-addressing.ts';
import { agentWorlds } from './testing/agent-world.ts';

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
});
