// A lost or corrupt ledger in a lab (issue 8, item 1): pods are up, ledger.json is removed (or
// overwritten with garbage) and the agent is killed by its PID; the lab's supervisor restarts it.
// Every pod must keep its network, no address may be handed out twice, the DEL of an old pod must
// clean exactly it, and once all pods are gone nothing of vpcnet may be left on the node.
// A damaged journal (issue 22): pods added since the last snapshot live only in the journal; the
// journal is zero-filled, or its last acknowledged records damaged, and the agent restarted. The
// damage is refused, not taken for a torn append: the pods keep their addresses and answer.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { getJson } from '../../src/infra/unix-socket-json.ts';
import { labLayout } from '../../src/lab/layout.ts';
import {
  addPod,
  cni,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  restartAgent,
  sh,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';

interface RecoveryState {
  recovery: { active: boolean; reason?: string; held?: { ip?: string }[] };
  attachments: unknown[];
}

async function recoveryState(node: LabNodeDesc): Promise<RecoveryState> {
  const { status, body } = await getJson(node.agentSocket, '/v1/state');
  if (status !== 200) throw new Error(`agent state: HTTP ${status}`);
  return body as RecoveryState;
}

/** vpcnet's leftovers on the node: host veths, pod rules, SNAT elements. */
async function nodeLeftovers(node: LabNodeDesc): Promise<string[]> {
  const veths = (await hostLinks(node)).filter((l) => l.startsWith('vpc'));
  const rules = (
    JSON.parse(await sh(['ip', '-n', node.netns, '-j', 'rule', 'show'])) as {
      priority: number;
      dst?: string;
    }[]
  )
    .filter((r) => r.priority === 512)
    .map((r) => `rule to ${r.dst}`);
  const set = await sh([
    'ip',
    'netns',
    'exec',
    node.netns,
    'nft',
    '-j',
    'list',
    'set',
    'ip',
    'vpcnet',
    'snat_pods',
  ]).catch(() => '{"nftables":[]}');
  const elems =
    (JSON.parse(set) as { nftables: { set?: { elem?: string[] } }[] }).nftables.find((i) => i.set)?.set
      ?.elem ?? [];
  return [...veths, ...rules, ...elems.map((e) => `snat ${e}`)];
}

const PORT = 7080;

/** An HTTP responder in a pod's namespace that answers with the pod's name. */
function podServer(name: string): string {
  return `require('node:http').createServer((q, s) => s.end(${JSON.stringify(name)})).listen(${PORT}, '0.0.0.0', () => console.log('listening'))`;
}

const HTTP_CLIENT = `require('node:http').get({ host: process.argv[1], port: ${PORT}, timeout: 5000 }, (r) => { let d = ''; r.on('data', (c) => { d += c; }); r.on('end', () => console.log(d)); }).on('timeout', function () { this.destroy(new Error('timeout')); }).on('error', (e) => { console.error(e.message); process.exit(1); });`;

/** What the pod at `ip` answers over HTTP, asked from the namespace `from` (undefined: no answer). */
async function answer(from: string, ip: string): Promise<string | undefined> {
  const r = await runProcess(['ip', 'netns', 'exec', from, process.execPath, '-e', HTTP_CLIENT, ip]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** Each line of `text` but its last `n` with one character of its record changed (its checksum fails). */
function damageLast(text: string, n: number): string {
  const lines = text.split('\n').slice(0, -1);
  return `${lines.map((l, i) => (i >= lines.length - n ? l.replace('"', "'") : l)).join('\n')}\n`;
}

describe('recovery of a lost or damaged ledger in a lab', () => {
  const name = uniqueLabName('rc');
  const servers: ChildProcess[] = [];
  let lab: LabDesc;
  let node: LabNodeDesc;
  const netns: string[] = [];

  before(async () => {
    await labDown(name);
    // Each recovery quarantines every address only EC2 lists. An m5.4xlarge (8 ENIs x 30), its pool
    // grown a few addresses at a time (WARM_IP_TARGET), keeps room beyond that through all four, so
    // new pods start at once. A node at its limits waits the quarantine out (recovery.test.ts in
    // src/agent/recovery/).
    const env = ['IP_COOLDOWN_PERIOD=2', 'WARM_IP_TARGET=4'].flatMap((e) => ['--agent-env', e]);
    lab = await labUp(name, ['--instance-type', 'm5.4xlarge', ...env]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    stopNetnsServers(servers);
    for (const ns of netns) await sh(['ip', 'netns', 'del', ns]).catch(() => undefined);
    await labDown(name);
  });

  for (const loss of ['missing', 'corrupt'] as const) {
    test(`with ledger.json ${loss}, a restarted agent keeps every pod and gives no address twice`, async () => {
      const pods: TestPod[] = [];
      const ips: string[] = [];
      for (const k of [1, 2, 3]) {
        const pod = await newPod(name, `${loss.slice(0, 1)}${k}`);
        netns.push(pod.netnsName);
        pods.push(pod);
        ips.push((await addPod(node, pod)).ip);
      }
      const ledger = join(labLayout(name, 1).nodes[0]!.stateDir, 'ledger.json');
      if (loss === 'missing') await rm(ledger);
      else await writeFile(ledger, '{"schemaVersion":2,"attachments":[{"key":');
      await restartAgent(name, node, 'SIGKILL');

      const host = lab.vpcHosts[0]!.ip;
      for (const [i, pod] of pods.entries())
        assert.ok(
          await reaches(pod.netnsName, host),
          `${pod.name} (${ips[i]}) lost the VPC after the restart`,
        );
      const state = await recoveryState(node);
      assert.equal(state.recovery.active, true);
      assert.equal(state.recovery.reason, loss === 'missing' ? 'ledgerMissing' : 'ledgerCorrupt');
      assert.deepEqual((state.recovery.held ?? []).map((r) => r.ip).sort(), [...ips].sort());
      if (loss === 'corrupt') {
        const kept = (await readdir(join(ledger, '..'))).filter((n) => n.startsWith('ledger.json.corrupt-'));
        assert.equal(kept.length, 1, 'the refused ledger is kept aside');
      }

      // New pods: never an address a live pod has, and no wait for the quarantine: the pool grows.
      const fresh: TestPod[] = [];
      for (const k of [1, 2]) {
        const pod = await newPod(name, `${loss.slice(0, 1)}n${k}`);
        netns.push(pod.netnsName);
        fresh.push(pod);
        const { ip } = await addPod(node, pod);
        assert.equal(ips.includes(ip), false, `${ip} was handed out again while ${pod.name}'s owner lives`);
        assert.ok(await reaches(pod.netnsName, host));
      }

      // The DEL of an old pod removes exactly its network.
      const [old, ...others] = pods;
      const before = await hostLinks(node);
      assert.equal((await cni(node, 'DEL', old!)).exitCode, 0);
      assert.equal(
        (await hostLinks(node)).length,
        before.length - 1,
        'DEL of a recovered pod removed one veth',
      );
      for (const pod of others) assert.ok(await reaches(pod.netnsName, host), `${pod.name} lost the VPC`);

      for (const pod of [...others, ...fresh]) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
      assert.deepEqual(await nodeLeftovers(node), [], 'vpcnet left objects on the node');
      const end = await recoveryState(node);
      assert.deepEqual(end.attachments, []);
      assert.equal(end.recovery.held?.length ?? 0, 0);
    });
  }

  for (const damage of ['zero-filled', 'last acknowledged records damaged'] as const) {
    test(`with the journal ${damage}, a restarted agent keeps every pod added since the snapshot and gives no address twice`, async () => {
      const short = damage === 'zero-filled' ? 'z' : 'd';
      const host = lab.vpcHosts[0]!;
      const { stateDir, agentLog } = labLayout(name, 1).nodes[0]!;
      const ledger = join(stateDir, 'ledger.json');
      const journal = `${ledger}.journal`;
      const pods: TestPod[] = [];
      const ips: string[] = [];
      for (const k of [1, 2, 3]) {
        const pod = await newPod(name, `${short}${k}`);
        netns.push(pod.netnsName);
        pods.push(pod);
        ips.push((await addPod(node, pod)).ip);
        await startNetnsServer(pod.netnsName, podServer(pod.name), servers);
      }
      for (const [i, pod] of pods.entries()) {
        assert.equal(await answer(host.netns, ips[i]!), pod.name, `${pod.name} answers before the damage`);
        assert.ok(
          !(await readFile(ledger, 'utf8')).includes(pod.containerId),
          'the pod is not in the snapshot',
        );
        assert.ok((await readFile(journal, 'utf8')).includes(pod.containerId), 'the pod is in the journal');
      }

      const text = await readFile(journal, 'utf8');
      await writeFile(
        journal,
        damage === 'zero-filled' ? '\0'.repeat(Buffer.byteLength(text)) : damageLast(text, 3),
      );
      await restartAgent(name, node, 'SIGKILL');

      const state = await recoveryState(node);
      assert.equal(state.recovery.active, true, 'the damaged journal was refused, not cut off as torn');
      assert.equal(state.recovery.reason, 'ledgerCorrupt');
      for (const ip of ips)
        assert.ok(
          state.recovery.held?.some((r) => r.ip === ip),
          `${ip} is held`,
        );
      const kept = (await readdir(stateDir)).filter((n) => n.startsWith('ledger.json.journal.corrupt-'));
      assert.ok(kept.length >= 1, 'the refused journal is kept aside');
      const refusal = (await readFile(agentLog, 'utf8'))
        .split('\n')
        .filter((l) => l.includes('ledger refused as corrupt'))
        .map((l) => JSON.parse(l) as { level: string; path: string; field: string; error: string })
        .at(-1);
      assert.equal(refusal?.level, 'error');
      assert.equal(refusal?.path, journal);
      assert.match(refusal?.field ?? '', /^line \d+$/);
      assert.match(refusal?.error ?? '', damage === 'zero-filled' ? /first line is not whole/ : /checksum/);

      for (const [i, pod] of pods.entries())
        assert.equal(await answer(host.netns, ips[i]!), pod.name, `${pod.name} (${ips[i]}) lost its network`);
      const fresh = await newPod(name, `${short}n`);
      netns.push(fresh.netnsName);
      const { ip } = await addPod(node, fresh);
      assert.equal(ips.includes(ip), false, `${ip} was handed out again while its pod lives`);
      for (const [i, pod] of pods.entries())
        assert.equal(
          await answer(host.netns, ips[i]!),
          pod.name,
          `${pod.name} answers after a new pod's ADD`,
        );

      for (const pod of [...pods, fresh]) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
      assert.deepEqual(await nodeLeftovers(node), [], 'vpcnet left objects on the node');
    });
  }
});
