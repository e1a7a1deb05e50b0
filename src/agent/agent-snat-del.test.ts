// A regular pod's SNAT element goes with its DEL, before the answer and before its address is
// released (docs/design.md, DEL): nothing of the pod is left behind the answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const worlds = agentWorlds();

test('DEL removes its SNAT element before it answers, and the address cools at once', async () => {
  const w = await worlds.world();
  const agent = await w.start();
  try {
    const netns = await w.netns('a');
    const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', netns))).stdout);
    assert.deepEqual(w.kernel.snatElements(), [ip]);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', netns))).exitCode, 0);
    assert.deepEqual(w.kernel.snatElements(), [], 'gone when DEL answers');
    assert.equal(agent.pool.state(ip)?.kind, 'cooling');
    assert.ok(
      agent.ledger.coolingAddresses().some((c) => c.ip === ip),
      'the cooldown is in the ledger',
    );
  } finally {
    await agent.stop();
  }
});

test('an ADD reusing the container ID right after its DEL gets a new address and keeps its own element', async () => {
  const w = await worlds.world();
  const agent = await w.start();
  try {
    const netns = await w.netns('a');
    const first = ipOf((await agent.cni(cniRequest('ADD', 'c1', netns))).stdout);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', netns))).exitCode, 0);
    const again = await agent.cni(cniRequest('ADD', 'c1', netns));
    assert.equal(again.exitCode, 0, again.stdout);
    const second = ipOf(again.stdout);
    assert.notEqual(second, first, 'the old address is cooling, not handed back');
    assert.deepEqual(w.kernel.snatElements(), [second]);
  } finally {
    await agent.stop();
  }
});
