// A lost or refused ledger (issue 8, item 1): the agent must not take "no ledger" for "nothing is
// owned". It holds what the kernel shows of its pods, lends none of their addresses, and lets go
// of each only on its DEL, a CNI GC that does not list it, or once its pod's veth is gone.
import assert from 'node:assert/strict';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();

async function nodeWithPods(w: Awaited<ReturnType<typeof world>>, count: number) {
  const agent = await w.start();
  const pods: { cid: string; ns: string; ip: string }[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const cid = `old${i}`;
      const ns = await w.netns(cid);
      const out = await agent.cni(cniRequest('ADD', cid, ns, `pod${i}`, `uid${i}`));
      assert.equal(out.exitCode, 0, out.stdout);
      pods.push({ cid, ns, ip: ipOf(out.stdout) });
    }
  } finally {
    await agent.stop();
  }
  return { pods, veths: w.kernel.veths().sort(), snat: w.kernel.snatElements() };
}

const ledgerPath = (w: { dir: string }) => join(w.dir, 'state', 'ledger.json');

for (const loss of ['missing', 'corrupt'] as const) {
  test(`with the ledger ${loss} and pods running, the agent keeps every pod's network and lends none of their addresses`, async () => {
    // The quarantine may leave no address for the new pods: their ADDs then give up after 1 s.
    const w = await world({ VPCNET_ADD_WAIT_SECONDS: '1' });
    const before = await nodeWithPods(w, 3);
    if (loss === 'missing') await rm(ledgerPath(w));
    else await writeFile(ledgerPath(w), '{"schemaVersion":2,"attachm');
    const agent = await w.start();
    try {
      assert.deepEqual(w.kernel.veths().sort(), before.veths, 'the start-up collection removed pod veths');
      assert.deepEqual(w.kernel.snatElements(), before.snat, 'the start-up collection removed SNAT entries');
      for (const p of before.pods) assert.equal(agent.pool.state(p.ip)?.kind, 'assigned', p.ip);
      assert.equal(agent.ledger.recovered().length, 3);
      // New pods get other addresses (cooldown 0 would not matter: they are assigned, not cooling).
      const oldIps = new Set(before.pods.map((p) => p.ip));
      for (let i = 0; i < 3; i++) {
        const ns = await w.netns(`new${i}`);
        const out = await agent.cni(cniRequest('ADD', `new${i}`, ns, `new${i}`, `nu${i}`));
        if (out.exitCode !== 0) continue; // the quarantine may leave no address yet: then it must wait
        assert.equal(oldIps.has(ipOf(out.stdout)), false, `a live pod's address was handed out again`);
      }
      // The DEL of an old pod removes exactly its network and cools its address down.
      const [first, ...rest] = before.pods;
      assert.ok(first);
      const del = await agent.cni(cniRequest('DEL', first.cid, first.ns, 'pod0', 'uid0'));
      assert.equal(del.exitCode, 0, del.stdout);
      assert.equal(w.kernel.snatElements().includes(first.ip), false);
      assert.equal(agent.pool.state(first.ip)?.kind, 'cooling');
      assert.equal(agent.ledger.recovered().length, 2);
      for (const p of rest) assert.ok(w.kernel.snatElements().includes(p.ip), `${p.ip} lost its SNAT entry`);
      if (loss === 'corrupt') {
        const kept = (await readdir(join(w.dir, 'state'))).filter((n) =>
          n.startsWith('ledger.json.corrupt-'),
        );
        assert.equal(kept.length, 1, 'the refused ledger is kept aside');
      }
    } finally {
      await agent.stop();
    }
    // A restart keeps holding what is left (the records are in the new ledger).
    const again = await w.start();
    try {
      assert.equal(again.ledger.recovered().length, 2);
      for (const p of before.pods.slice(1)) assert.equal(again.pool.state(p.ip)?.kind, 'assigned');
    } finally {
      await again.stop();
    }
  });
}

test('a CNI GC releases the recovered records whose veth no listed attachment is named after', async () => {
  const w = await world();
  const before = await nodeWithPods(w, 2);
  await rm(ledgerPath(w));
  const agent = await w.start();
  try {
    const [keep, gone] = before.pods;
    assert.ok(keep && gone);
    const gc = await agent.cni({
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'vpcnet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': [{ containerID: keep.cid, ifname: 'eth0' }],
      }),
    });
    assert.equal(gc.exitCode, 0, gc.stdout);
    assert.deepEqual(
      agent.ledger.recovered().map((r) => r.ip),
      [keep.ip],
    );
    assert.equal(w.kernel.veths().length, 1);
    assert.equal(agent.pool.state(gone.ip)?.kind, 'cooling');
    assert.equal(agent.pool.state(keep.ip)?.kind, 'assigned');
  } finally {
    await agent.stop();
  }
});

test('with no ledger and nothing of vpcnet on the node, the start is a fresh one (no recovery, no quarantine)', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    assert.deepEqual(agent.ledger.recovered(), []);
    assert.equal(agent.pool.stats(Date.now()).cooling, 0);
  } finally {
    await agent.stop();
  }
});

test('a ledger without a journal to append to is compacted before the agent serves, not by the first ADD', async () => {
  const w = await world();
  await (await w.start()).stop();
  // A snapshot whose journal is gone (as after a torn first line): the next write must compact.
  await rm(join(w.dir, 'state', 'ledger.json.journal'));
  const agent = await w.start();
  try {
    const state = await readdir(join(w.dir, 'state'));
    assert.ok(state.includes('ledger.json.journal'), `written at start: ${state.join(' ')}`);
  } finally {
    await agent.stop();
  }
});
