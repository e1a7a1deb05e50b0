import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../infra/log.ts';
import { FakeCloud } from '../ipam/testing/fake-cloud.ts';
import { noPodSource } from '../pods/pod-source.ts';
import { startAgent } from './agent.ts';
import { ignoredInIpv6Mode } from './ipv6-addressing.ts';
import { agentEnv } from './testing/agent-world.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function ipv6Node(cloud: FakeCloud) {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-v6c-'));
  dirs.push(dir);
  const config = agentConfigFromEnv(
    agentEnv(dir, { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true', IP_COOLDOWN_PERIOD: '30' }),
  );
  const start = () =>
    startAgent({
      config,
      targets: config.targets,
      cloud,
      dataplane: new Dataplane(new FakeKernel()),
      pods: noPodSource,
      log: silentLogger,
      now: Date.now,
      notANetworkNamespace: async () => undefined,
      poolIntervalMs: 60_000,
    });
  return { start };
}

const IPV4_GROWTH = ['assignPrivateIps', 'assignIpv4Prefixes', 'createEni', 'attachEni'];

test('an IPv6 agent holds one /80 on the primary ENI, shows it in its state, and grows no IPv4 pool', async () => {
  const cloud = new FakeCloud({ ipv6Subnet: '2001:db8:5e00:0' });
  const node = await ipv6Node(cloud);
  const agent = await node.start();
  try {
    const prefixes = cloud.enis.get('eni-primary')?.ipv6Prefixes ?? [];
    assert.equal(prefixes.length, 1);
    const pool = agent.introspect().pool as { ipv6?: { prefix: string | null; problem: string | null } };
    assert.equal(pool.ipv6?.prefix, prefixes[0]);
    assert.equal(pool.ipv6?.problem, null);
    assert.deepEqual(
      cloud.calls.filter((c) => IPV4_GROWTH.some((m) => c.startsWith(`${m} `))),
      [],
    );
  } finally {
    await agent.stop();
  }
  const again = await node.start();
  try {
    assert.equal(
      cloud.calls.filter((c) => c.startsWith('assignIpv6Prefixes')).length,
      1,
      'the /80 is adopted',
    );
  } finally {
    await again.stop();
  }
});

test('an IPv6 agent on an IPv4-only subnet starts and says why pods get no address', async () => {
  const agent = await (await ipv6Node(new FakeCloud())).start();
  try {
    const pool = agent.introspect().pool as { ipv6?: { problem: string | null } };
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
