// A lost or corrupt ledger in a lab (issue 8, item 1): pods are up, ledger.json is removed (or
// overwritten with garbage) and the agent is killed by its PID; the lab's supervisor restarts it.
// Every pod must keep its network, no address may be handed out twice, the DEL of an old pod must
// clean exactly it, and once all pods are gone nothing of vpcnet may be left on the node.
import assert from 'node:assert/strict';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { getJson } from '../src/infra/unix-socket-json.ts';
import { labLayout } from '../src/lab/layout.ts';
import { isRecordedProcessAlive, readRecords } from '../src/lab/processes.ts';
import { unixHttp } from '../src/lab/unix-http.ts';
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
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
} from './lab-fixture.ts';

interface RecoveryState {
  recovery: { active: boolean; reason?: string; held?: { ip?: string }[] };
  attachments: unknown[];
}

async function recoveryState(node: LabNodeDesc): Promise<RecoveryState> {
  const { status, body } = await getJson(node.agentSocket, '/v1/state');
  if (status !== 200) throw new Error(`agent state: HTTP ${status}`);
  return body as RecoveryState;
}

/** Kills the node's agent by its recorded PID and waits until the supervisor's new one serves. */
async function killAgent(lab: string, node: LabNodeDesc): Promise<void> {
  const pids = labLayout(lab, 1).files.pidsDir;
  const agent = (await readRecords(pids)).find((r) => r.role === `agent-${node.name}`);
  assert.ok(agent !== undefined && isRecordedProcessAlive(agent), 'the agent runs');
  process.kill(agent.pid, 'SIGKILL');
  await waitFor(
    'the restarted agent to serve',
    async () => {
      const now = (await readRecords(pids)).find((r) => r.role === `agent-${node.name}`);
      if (now === undefined || now.pid === agent.pid || !isRecordedProcessAlive(now)) return undefined;
      const res = await unixHttp(node.agentSocket, 'GET', '/v1/healthz');
      return res.status === 200 ? true : undefined;
    },
    60_000,
  );
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

describe('recovery of a lost ledger in a lab', () => {
  const name = uniqueLabName('rc');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const netns: string[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--agent-env', 'IP_COOLDOWN_PERIOD=2']);
    node = lab.nodes[0]!;
  });
  after(async () => {
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
      await killAgent(name, node);

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

      // New pods: never an address a live pod has (the pool may have to grow, or wait out the quarantine).
      const fresh: TestPod[] = [];
      for (const k of [1, 2]) {
        const pod = await newPod(name, `${loss.slice(0, 1)}n${k}`);
        netns.push(pod.netnsName);
        fresh.push(pod);
        const { ip } = await waitFor('an ADD after the recovery', () => addPod(node, pod), 90_000);
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
});
