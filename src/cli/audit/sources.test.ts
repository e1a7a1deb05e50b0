// Reading the agents: at most `parallel` at once (in a cluster each read is a kubectl exec), only
// the nodes asked for, every node named in the result in order, and one that fails says why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countingAgents, scriptedAgents } from '../testing/scripted-agents.ts';
import { readAgents } from './sources.ts';

const nodes = Array.from({ length: 10 }, (_, k) => `node${String(k).padStart(2, '0')}`);

test('agents are read at most `parallel` at once, all of them, in node order', async () => {
  const source = countingAgents(nodes, 20);
  const read = await readAgents(source.agents, { parallel: 3 });
  assert.equal(source.most, 3);
  assert.deepEqual(
    read.map((a) => a.node),
    nodes,
  );
  assert.ok(read.every((a) => a.state?.instanceId === `i-${a.node}`));
});

test('only the nodes asked for are read', async () => {
  const source = countingAgents(nodes, 1);
  const read = await readAgents(source.agents, { only: new Set(['node04']) });
  assert.deepEqual(
    read.map((a) => a.node),
    ['node04'],
  );
  assert.equal(source.reads, 1);
});

test('an agent that cannot be read is named with the reason, the others are read', async () => {
  const read = await readAgents(
    scriptedAgents({ a: [new Error('connect ENOENT /run/vpcnet/agent.sock')], b: [{ instanceId: 'i-b' }] }),
  );
  assert.deepEqual(read[0], { node: 'a', error: 'connect ENOENT /run/vpcnet/agent.sock' });
  assert.equal(read[1]?.state?.instanceId, 'i-b');
});
