// The agent's CNI operations end to end in-process (see testing/agent-world.ts): what ADD answers and
// records, that a stale DEL keeps the new sandbox's network, that a failed ADD undoes itself, that
// DEL of the unknown succeeds, and CNI GC and STATUS.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeLedgerFs } from '../ledger/storage/node-fs.ts';
import { FileLedgerStore } from '../ledger/storage/store.ts';
import { attachmentHostVeth } from '../plan/attachment.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();

test('ADD answers a 1.0.0 result and the attachment is on disk before the answer', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const res = await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    assert.equal(res.exitCode, 0, res.stdout);
    const result = JSON.parse(res.stdout) as {
      cniVersion: string;
      ips: { address: string; gateway: string }[];
    };
    assert.equal(result.cniVersion, '1.0.0');
    assert.equal(result.ips[0]!.gateway, '169.254.1.1');
    // What is on disk: the snapshot and the journal after it, as the next start reads them (with
    // removal turned off: a temp file of the running agent's next write is not this test's).
    const readOnly = { ...nodeLedgerFs, removeFile: async () => {} };
    const onDisk = await new FileLedgerStore(join(w.dir, 'state', 'ledger.json'), readOnly).load();
    assert.ok(onDisk, 'nothing on disk');
    assert.equal(onDisk.attachments.length, 1);
    assert.equal(onDisk.attachments[0]!.resources.find((r) => r.kind === 'vpcAddress')?.ip, ipOf(res.stdout));
    assert.equal(onDisk.attachments[0]!.phase, undefined);
    // The namespace is recorded by identity too, so a reused path is never mistaken for it.
    assert.match(onDisk.attachments[0]!.netnsId ?? '', /^\d+:\d+$/);
  } finally {
    await agent.stop();
  }
});

test('stale DEL for a replaced sandbox keeps the new sandbox network', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const oldNs = await w.netns('old');
    const newNs = await w.netns('new');
    const a = await agent.cni(cniRequest('ADD', 'a279', oldNs));
    const b = await agent.cni(cniRequest('ADD', '30c8', newNs));
    assert.notEqual(ipOf(a.stdout), ipOf(b.stdout));
    const newVeth = attachmentHostVeth(agent.ledger.list().find((x) => x.key.containerId === '30c8')!);
    assert.equal((await agent.cni(cniRequest('DEL', 'a279', oldNs))).exitCode, 0);
    assert.ok(w.kernel.veths().includes(newVeth), 'the stale DEL removed the new sandbox veth');
    assert.deepEqual(w.kernel.snatElements(), [ipOf(b.stdout)]);
    assert.equal((await agent.cni(cniRequest('CHECK', '30c8', newNs))).exitCode, 0);
  } finally {
    await agent.stop();
  }
});

test('a failed ADD leaves no ledger record, no kernel state and no lost address', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const before = agent.pool.stats(Date.now());
    w.kernel.failNext(
      (op) => op.op === 'ruleAdd' && op.rule.priority === 512,
      'RTNETLINK answers: File exists',
    );
    const res = await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    assert.equal(res.exitCode, 1);
    assert.match(JSON.parse(res.stdout).msg as string, /File exists/);
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
    const afterStats = agent.pool.stats(Date.now());
    assert.equal(afterStats.assigned, before.assigned);
    assert.equal(afterStats.total, before.total);
  } finally {
    await agent.stop();
  }
});

test('DEL of an unknown attachment, and a repeated DEL, succeed', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    assert.equal((await agent.cni(cniRequest('DEL', 'never-added', ''))).exitCode, 0);
    const ns = await w.netns('a');
    await agent.cni(cniRequest('ADD', 'c1', ns));
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', ns))).exitCode, 0);
    assert.equal((await agent.cni(cniRequest('DEL', 'c1', ''))).exitCode, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
  } finally {
    await agent.stop();
  }
});

test('CNI GC removes exactly the attachments of this network the runtime no longer lists; STATUS answers ready', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const keep = await w.netns('keep');
    const gone = await w.netns('gone');
    await agent.cni(cniRequest('ADD', 'keep1', keep, 'keep', 'u-keep'));
    await agent.cni(cniRequest('ADD', 'gone1', gone, 'gone', 'u-gone'));
    const keepVeth = attachmentHostVeth(agent.ledger.list().find((a) => a.key.containerId === 'keep1')!);
    const gc = await agent.cni({
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'vpcnet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': [{ containerID: 'keep1', ifname: 'eth0' }],
      }),
    });
    assert.equal(gc.exitCode, 0, gc.stdout);
    assert.deepEqual(
      agent.ledger.list().map((a) => a.key.containerId),
      ['keep1'],
    );
    assert.deepEqual(w.kernel.veths(), [keepVeth]);
    const other = await agent.cni({
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'othernet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': [],
      }),
    });
    assert.equal(other.exitCode, 0);
    assert.equal(agent.ledger.list().length, 1, 'GC of another network touched this one');
    const status = await agent.cni({
      env: { CNI_COMMAND: 'STATUS' },
      stdin: JSON.stringify({ cniVersion: '1.1.0', name: 'vpcnet', type: 'vpcnet' }),
    });
    assert.deepEqual(status, { exitCode: 0, stdout: '' });
  } finally {
    await agent.stop();
  }
});
