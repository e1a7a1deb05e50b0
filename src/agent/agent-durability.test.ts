// What outlives the agent's process (durable before success): the cooldown of a freed address, a
// half-done ADD found at start, and DELs the plugin spooled while the agent was down or busy.
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { attachmentIp } from '../plan/attachment.ts';
import { agentWorlds, until } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();

/** A spool file name as the plugin writes it (src/plugin/spool.ts): wall-clock ms first. */
function spoolName(ms: number): string {
  return `${String(ms).padStart(15, '0')}-${'1'.padStart(20, '0')}-1-abcd0123.del.json`;
}

test('the cooldown of a freed address survives an agent restart', async () => {
  const w = await world({ IP_COOLDOWN_PERIOD: '3600' });
  let agent = await w.start();
  const ns = await w.netns('a');
  const first = ipOf((await agent.cni(cniRequest('ADD', 'c1', ns))).stdout);
  await agent.cni(cniRequest('DEL', 'c1', ns));
  await agent.stop();
  agent = await w.start();
  try {
    assert.equal(agent.pool.state(first)?.kind, 'cooling');
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const out = await agent.cni(cniRequest('ADD', `n${i}`, await w.netns(`n${i}`), `p${i}`, `u${i}`));
      if (out.exitCode === 0) seen.add(ipOf(out.stdout));
    }
    assert.ok(!seen.has(first), 'a cooling address was handed out after the restart');
  } finally {
    await agent.stop();
  }
});

test('a half-done ADD found at start is removed: its kernel state and its record', async () => {
  const w = await world();
  let agent = await w.start();
  const ns = await w.netns('a');
  await agent.cni(cniRequest('ADD', 'c1', ns));
  const att = agent.ledger.list()[0]!;
  // Simulate a crash between the kernel changes and the final ledger write.
  agent.ledger.put({ ...att, phase: 'adding' });
  await agent.ledger.commit();
  await agent.stop();
  agent = await w.start();
  try {
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
    assert.equal(agent.pool.state(attachmentIp(att) ?? '')?.kind !== 'assigned', true);
  } finally {
    await agent.stop();
  }
});

test('DELs spooled while the agent was down are applied before it serves', async () => {
  const w = await world();
  let agent = await w.start();
  const ns = await w.netns('a');
  await agent.cni(cniRequest('ADD', 'c1', ns));
  await agent.stop();
  const spool = join(w.dir, 'state', 'del-spool');
  await mkdir(spool, { recursive: true });
  await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(cniRequest('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
  } finally {
    await agent.stop();
  }
});

test('a spooled DEL older than the attachment holding its key (a reused container ID) leaves that attachment alone', async () => {
  const w = await world();
  const ns = await w.netns('a');
  let agent = await w.start();
  const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', ns))).stdout);
  await agent.stop();
  const spool = join(w.dir, 'state', 'del-spool');
  await mkdir(spool, { recursive: true });
  // Spooled for an earlier attachment with this key, a minute before the current one was created.
  await writeFile(join(spool, spoolName(Date.now() - 60_000)), JSON.stringify(cniRequest('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    const current = agent.ledger.list()[0];
    assert.equal(
      current && attachmentIp(current),
      ip,
      'the stale spooled DEL removed the current attachment',
    );
    assert.deepEqual(await readdir(spool), [], 'the stale DEL was kept instead of dropped');
  } finally {
    await agent.stop();
  }
});

test('a DEL spooled while the agent runs is applied without a restart', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    await agent.cni(cniRequest('ADD', 'c1', ns));
    const spool = join(w.dir, 'state', 'del-spool');
    await mkdir(spool, { recursive: true });
    await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(cniRequest('DEL', 'c1', ns)));
    await until(() => agent.ledger.list().length === 0, 15_000);
    assert.equal(agent.ledger.list().length, 0, 'the spooled DEL was not applied while the agent ran');
  } finally {
    await agent.stop();
  }
});
