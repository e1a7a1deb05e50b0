// ANNOTATE_POD_IP through the agent in-process: an ADD queues the pod's address for its annotation
// and answers without waiting for the API, a DEL queues the clearing of the address it released;
// only the pod's primary interface counts, and only a pod the runtime named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ForwardedRequest } from '../cni/wire.ts';
import { type PodIpWrite, QueuedPodIpAnnotations } from '../pods/pod-ip-annotation.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();
const quiet = { warn: () => {} };

function onInterface(req: ForwardedRequest, ifName: string): ForwardedRequest {
  return { ...req, env: { ...req.env, CNI_IFNAME: ifName } };
}

test('ADD queues the pod address for its annotation, DEL queues its clearing; other interfaces and unnamed pods are left out', async () => {
  const w = await world();
  const writes: PodIpWrite[] = [];
  const annotations = new QueuedPodIpAnnotations({ write: async (x) => void writes.push(x), log: quiet });
  const agent = await w.start({ podIpAnnotations: annotations });
  try {
    const ns = await w.netns('a');
    const add = await agent.cni(cniRequest('ADD', 'c1', ns, 'web-0'));
    assert.equal(add.exitCode, 0, add.stdout);
    const ip = ipOf(add.stdout);
    const second = await agent.cni(onInterface(cniRequest('ADD', 'c1', ns, 'web-0'), 'net1'));
    assert.equal(second.exitCode, 0, second.stdout);
    const { CNI_ARGS: _, ...env } = cniRequest('ADD', 'c2', await w.netns('b')).env;
    const anonymous = { ...cniRequest('ADD', 'c2', ''), env };
    assert.equal((await agent.cni(anonymous)).exitCode, 0);
    assert.equal((await agent.cni(onInterface(cniRequest('DEL', 'c1', ns, 'web-0'), 'net1'))).exitCode, 0);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', ns, 'web-0'))).exitCode, 0);
    // A DEL of what is already gone releases nothing: nothing to clear.
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', ns, 'web-0'))).exitCode, 0);
    await annotations.idle();
    const pod = { namespace: 'default', name: 'web-0' };
    assert.deepEqual(writes, [
      { kind: 'set', pod, ip },
      { kind: 'clear', pod, ip },
    ]);
    assert.deepEqual(agent.introspect().podIpAnnotations, { written: 2, failed: 0, dropped: 0, queued: 0 });
  } finally {
    await agent.stop();
  }
});

async function addDelMedianMs(
  agent: { cni(r: ForwardedRequest): Promise<{ exitCode: number }> },
  ns: string,
) {
  const times: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    assert.equal((await agent.cni(cniRequest('ADD', `k${i}`, ns, `p${i}`))).exitCode, 0);
    times.push(performance.now() - t0);
    assert.equal((await agent.cni(cniRequest('DEL', `k${i}`, ns, `p${i}`))).exitCode, 0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? 0;
}

test('an API that never answers delays no ADD, nor the stop: the writes wait in the queue', async (t) => {
  // No cooldown: the 15 ADDs reuse the node's 11 addresses.
  const plain = await world({ IP_COOLDOWN_PERIOD: '0' });
  const baseline = await plain.start();
  let withoutMs: number;
  try {
    withoutMs = await addDelMedianMs(baseline, await plain.netns('a'));
  } finally {
    await baseline.stop();
  }
  const w = await world({ IP_COOLDOWN_PERIOD: '0' });
  const started: PodIpWrite[] = [];
  const hung = new QueuedPodIpAnnotations({
    write: (x) => {
      started.push(x);
      return new Promise<void>(() => {});
    },
    log: quiet,
    parallel: 2,
  });
  const agent = await w.start({ podIpAnnotations: hung });
  let stopping: Promise<void> | undefined;
  let withMs: number;
  try {
    withMs = await addDelMedianMs(agent, await w.netns('a'));
    assert.equal(started.length, 2, 'two writes under way, the rest queued');
    assert.equal(hung.figures().queued, 28);
    // Same work either way; the bound only absorbs a busy machine's noise.
    assert.ok(
      withMs < withoutMs * 3 + 10,
      `ADD median ${withMs.toFixed(2)} ms with a hung API, ${withoutMs.toFixed(2)} ms without`,
    );
    // The writes under way never end: the agent's stop does not wait for them.
    stopping = agent.stop();
    const outcome = await Promise.race([
      stopping.then(() => 'stopped'),
      new Promise((r) => setTimeout(() => r('waited on the API'), 5000)),
    ]);
    assert.equal(outcome, 'stopped');
  } finally {
    // Stopped also when an assertion failed: a running agent would keep the test file alive.
    await (stopping ?? agent.stop());
  }
  assert.equal(hung.figures().dropped, 28);
  t.diagnostic(`ADD median ${withMs.toFixed(2)} ms with a hung API, ${withoutMs.toFixed(2)} ms without`);
});
