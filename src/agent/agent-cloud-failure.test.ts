// While the EC2 API fails, the agent keeps serving ADDs from its warm pool and says in its state
// why the pool cannot grow.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLOUD_MUTATIONS } from '../ipam/testing/fake-cloud.ts';
import { agentWorlds, until } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();

test('while every EC2 call fails, ADDs are served from the warm pool and the state says why the pool cannot grow', async () => {
  const w = await world();
  // The node starts with 4 of its 11 addresses: the pool wants to grow.
  w.cloud.enis.get('eni-primary')!.secondaryIps.splice(4);
  for (const m of CLOUD_MUTATIONS) w.cloud.failNext(m, undefined, 10_000);
  const agent = await w.start(); // its start-up describe works: it serves only once it agrees with EC2
  w.cloud.failNext('describeInstanceEnis', undefined, 10_000);
  try {
    await until(() => agent.introspect().pool.growth.blocked !== null, 10_000);
    const growth = agent.introspect().pool.growth;
    assert.ok(growth.blocked !== null, 'the state says the pool is blocked');
    assert.match(growth.blocked, /RequestLimitExceeded/);
    assert.ok(growth.failures >= 1);
    const ips = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const out = await agent.cni(cniRequest('ADD', `c${i}`, await w.netns(`p${i}`), `p${i}`, `u${i}`));
      assert.equal(out.exitCode, 0, out.stdout);
      ips.add(ipOf(out.stdout));
    }
    assert.equal(ips.size, 4, 'four pods, four addresses of the warm pool');
    assert.equal(agent.introspect().pool.stats.total, 4, 'the pool did not grow meanwhile');
  } finally {
    await agent.stop();
  }
});
