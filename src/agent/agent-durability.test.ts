// What outlives the agent's process (durable before success): the cooldown of a freed address, a
// half-done ADD found at start, and DELs the plugin spooled while the agent was down or busy.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
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

test('a spooled DEL is applied whatever the clocks say: the ADD ran on a clock ahead of the one that named the file', async () => {
  const w = await world();
  const ns = await w.netns('a');
  // The clock stepped back between the ADD and the spooling of its DEL: the attachment's createdAt
  // is later than the time in the spool file's name. Neither may decide.
  let agent = await w.start({ now: () => Date.now() + 3_600_000 });
  await agent.cni(cniRequest('ADD', 'c1', ns));
  await agent.stop();
  const spool = join(w.dir, 'state', 'del-spool');
  await mkdir(spool, { recursive: true });
  await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(cniRequest('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    assert.deepEqual(agent.ledger.list(), [], 'the real DEL was dropped as stale');
    assert.deepEqual(w.kernel.podResidue(), []);
    assert.deepEqual(await readdir(spool), []);
  } finally {
    await agent.stop();
  }
});

test('a DEL spooled for a reused container ID is applied by the ADD of that key, before it attaches, and never after', async () => {
  const w = await world();
  let agent = await w.start();
  const spool = join(w.dir, 'state', 'del-spool');
  try {
    const old = await w.netns('old');
    const oldIp = ipOf((await agent.cni(cniRequest('ADD', 'c1', old))).stdout);
    // The runtime's DEL of the old sandbox found the socket refused (a rollout): spooled.
    await mkdir(spool, { recursive: true });
    await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(cniRequest('DEL', 'c1', old)));
    // Then its ADD of a new sandbox with the same container ID, while the agent runs.
    const fresh = await w.netns('new');
    const out = await agent.cni(cniRequest('ADD', 'c1', fresh));
    assert.equal(out.exitCode, 0, out.stdout);
    assert.deepEqual(await readdir(spool), [], 'the spooled DEL was not applied before the ADD');
    assert.equal(agent.pool.state(oldIp)?.kind, 'cooling', 'the old attachment was not released by its DEL');
    const [current] = agent.ledger.list();
    assert.equal(current?.netns, fresh);
    // Drains after the ADD (at start, and the periodic one) leave the new attachment alone.
    await agent.stop();
    agent = await w.start();
    assert.deepEqual(
      agent.ledger.list().map((a) => [a.netns, attachmentIp(a)]),
      [[fresh, current && attachmentIp(current)]],
    );
  } finally {
    await agent.stop();
  }
});

test('a FIFO and a dangling symlink in the spool neither block nor stop the agent: it serves, applies the real DEL and exits', {
  timeout: 30_000,
}, async () => {
  const w = await world();
  let agent = await w.start();
  const ns = await w.netns('a');
  await agent.cni(cniRequest('ADD', 'c1', ns));
  await agent.stop();
  const spool = join(w.dir, 'state', 'del-spool');
  await mkdir(spool, { recursive: true });
  execFileSync('mkfifo', [join(spool, spoolName(Date.now() - 2))]);
  await symlink(join(w.dir, 'nowhere'), join(spool, spoolName(Date.now() - 1)));
  await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(cniRequest('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    assert.deepEqual(agent.ledger.list(), [], 'the real spooled DEL was not applied');
    assert.equal((await readdir(spool)).filter((n) => n.endsWith('.rejected')).length, 2);
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
