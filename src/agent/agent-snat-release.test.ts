// A DEL answers before its pod's SNAT element is removed (snat-release.ts). These tests hold that
// removal back (a kernel whose SNAT deletions wait on a gate) to see what happens meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../dataplane/dataplane.ts';
import type { Kernel } from '../dataplane/kernel.ts';
import type { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import { kernelWithRun } from '../dataplane/testing/wrapped-kernel.ts';
import type { RunningAgent } from './agent-deps.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const worlds = agentWorlds();

/** A fake kernel whose runs that delete SNAT elements wait until the gate opens. */
function gatedKernel(inner: FakeKernel): { kernel: Kernel; open(): void; waiting(): number } {
  let opened = false;
  let waiters: (() => void)[] = [];
  const kernel = kernelWithRun(inner, async (ns, ops, mode) => {
    if (!opened && ops.some((o) => o.op === 'snatDel')) await new Promise<void>((r) => waiters.push(r));
    return inner.run(ns, ops, mode);
  });
  return {
    kernel,
    open() {
      opened = true;
      for (const w of waiters) w();
      waiters = [];
    },
    waiting: () => waiters.length,
  };
}

async function withGatedAgent(
  body: (a: {
    agent: RunningAgent;
    fake: FakeKernel;
    gate: ReturnType<typeof gatedKernel>;
    netns: string;
  }) => Promise<void>,
): Promise<void> {
  const w = await worlds.world();
  const fake = w.kernel;
  const gate = gatedKernel(fake);
  const agent = await w.start({ dataplane: new Dataplane(gate.kernel) });
  const netns = await w.netns('a');
  try {
    await body({ agent, fake, gate, netns });
  } finally {
    gate.open();
    await agent.stop();
  }
}

test('DEL answers while its SNAT element is still being removed; the address cools only once it is gone', async () => {
  await withGatedAgent(async ({ agent, fake, gate, netns }) => {
    const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', netns))).stdout);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', netns))).exitCode, 0);
    assert.deepEqual(agent.ledger.list(), [], 'the record is gone when DEL answers');
    assert.deepEqual(fake.snatElements(), [ip], 'the element is still there');
    assert.equal(agent.pool.state(ip)?.kind, 'assigned', 'the address stays held meanwhile');
    gate.open();
    await agent.settled();
    assert.deepEqual(fake.snatElements(), []);
    assert.equal(agent.pool.state(ip)?.kind, 'cooling');
    assert.ok(agent.ledger.coolingAddresses().some((c) => c.ip === ip));
  });
});

test('an ADD reusing the container ID of a DEL whose SNAT element is still going waits, and keeps its own element and address', async () => {
  await withGatedAgent(async ({ agent, fake, gate, netns }) => {
    const first = ipOf((await agent.cni(cniRequest('ADD', 'c1', netns))).stdout);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', netns))).exitCode, 0);
    let answered = false;
    const again = agent.cni(cniRequest('ADD', 'c1', netns)).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(answered, false, 'the ADD waits for its key’s pending removal');
    gate.open();
    const res = await again;
    assert.equal(res.exitCode, 0, res.stdout);
    const second = ipOf(res.stdout);
    await agent.settled();
    assert.notEqual(second, first, 'the old address is cooling, not handed back');
    assert.deepEqual(fake.snatElements(), [second], 'the new pod keeps its SNAT element');
    assert.equal(agent.pool.state(second)?.kind, 'assigned');
    assert.equal(agent.pool.state(first)?.kind, 'cooling');
  });
});
