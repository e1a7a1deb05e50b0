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

test("a start EC2 keeps throttling past its calls' retries tries again and serves, instead of exiting", async () => {
  const w = await world();
  w.cloud.failNext('instanceTypeLimits', undefined, 1);
  w.cloud.failNext('describeInstanceEnis', undefined, 2);
  const agent = await w.start();
  try {
    const out = await agent.cni(cniRequest('ADD', 'c0', await w.netns('p0'), 'p0', 'u0'));
    assert.equal(out.exitCode, 0, out.stdout);
    const calls = w.cloud.calls.filter((c) => /^(instanceTypeLimits|describeInstanceEnis)/.test(c));
    assert.deepEqual(
      calls.map((c) => c.split(' ')[0]),
      [
        'instanceTypeLimits',
        'instanceTypeLimits',
        'describeInstanceEnis',
        'describeInstanceEnis',
        'describeInstanceEnis',
      ],
      'each step tried until EC2 answered it',
    );
  } finally {
    await agent.stop();
  }
});
