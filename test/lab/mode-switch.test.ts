// Switching a node between address modes with pods running, in a one-node lab: pods start with
// secondary IPs; the agent is restarted with ENABLE_PREFIX_DELEGATION=true; every running pod keeps
// its address (CHECK passes, its address is still the ENI's in EC2) and its traffic, and new pods
// get addresses out of /28 prefixes; then back to secondary IPs, and still every pod keeps its
// address and traffic. The lab's supervisor would restart the agent with the lab's own environment,
// so it is paused (SIGSTOP) while this suite runs agents of its own with the changed setting, and
// resumed at the end.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import {
  isRecordedProcessAlive,
  type ProcessRecord,
  readRecords,
} from '../../src/lab/processes/processes.ts';
import { unixHttp } from '../../src/lab/unix-http.ts';
import {
  addPod,
  attachedEnis,
  cni,
  deletePodNetns,
  inIpv4Prefixes,
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
} from '../lab-fixture.ts';

interface RunningPod {
  readonly pod: TestPod;
  readonly ip: string;
  readonly result: unknown;
}

/** argv and environment of a running process, from /proc. */
async function processLaunch(pid: number): Promise<{ argv: string[]; env: Record<string, string> }> {
  const split = (text: string) => text.split('\0').filter((s) => s !== '');
  const argv = split(await readFile(`/proc/${pid}/cmdline`, 'utf8'));
  const env: Record<string, string> = {};
  for (const pair of split(await readFile(`/proc/${pid}/environ`, 'utf8'))) {
    const eq = pair.indexOf('=');
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return { argv, env };
}

describe('switching address modes with pods running', { timeout: 300_000 }, () => {
  const name = uniqueLabName('i1r');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const running: RunningPod[] = [];
  const ownAgents: ChildProcess[] = [];
  let supervisor: ProcessRecord | undefined;
  let launch: { argv: string[]; env: Record<string, string> };

  const layout = () => labLayout(name, 1);
  const enis = () => attachedEnis(name);

  async function startPods(count: number): Promise<RunningPod[]> {
    const out: RunningPod[] = [];
    for (let i = 0; i < count; i++) {
      const pod = await newPod(name, `m${running.length}`);
      const { ip, result } = await addPod(node, pod);
      running.push({ pod, ip, result });
      out.push({ pod, ip, result });
    }
    return out;
  }

  /** Every running pod passes CHECK, has its address on eth0 still, and reaches the VPC host. */
  async function everyPodKeepsItsAddress(when: string): Promise<void> {
    const host = lab.vpcHosts[0]!.ip;
    for (const r of running) {
      const check = await cni(node, 'CHECK', r.pod, r.result);
      assert.equal(check.exitCode, 0, `${when}: CHECK of ${r.pod.name} (${r.ip}) failed: ${check.stdout}`);
      const addr = await sh(['ip', '-n', r.pod.netnsName, '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
      assert.ok(addr.includes(` ${r.ip}/`), `${when}: ${r.pod.name} lost ${r.ip}: ${addr}`);
      assert.ok(
        await reaches(r.pod.netnsName, host),
        `${when}: ${r.pod.name} (${r.ip}) cannot reach ${host}`,
      );
    }
    const cloud = await enis();
    for (const r of running) {
      const owned = cloud.some((e) => e.secondaryIps.includes(r.ip)) || inIpv4Prefixes(r.ip, cloud);
      assert.ok(owned, `${when}: ${r.ip} is no longer assigned to the node's ENIs in EC2`);
    }
  }

  /** Stops the node's running agent and starts one of this suite's with `changes` in its environment. */
  async function restartAgent(changes: Record<string, string>): Promise<void> {
    const current = ownAgents.at(-1);
    if (current === undefined) {
      // The lab's own agent, a child of the paused supervisor: it stays a zombie once it exits.
      const recorded = (await readRecords(layout().files.pidsDir)).find(
        (r) => r.role === `agent-${node.name}`,
      );
      if (recorded === undefined || !isRecordedProcessAlive(recorded))
        throw new Error('no running lab agent');
      process.kill(recorded.pid, 'SIGTERM');
      await waitFor(
        'the agent to exit',
        async () => (isRecordedProcessAlive(recorded) ? undefined : true),
        30_000,
      );
    } else {
      const exited = new Promise((r) => current.once('exit', r));
      if (current.exitCode === null && current.pid !== undefined) process.kill(current.pid, 'SIGTERM');
      if (current.exitCode === null) await exited;
    }
    const log = openSync(layout().nodes[0]!.agentLog, 'a');
    const child = spawn('nsenter', [`--net=/var/run/netns/${node.netns}`, ...launch.argv], {
      env: { ...launch.env, ...changes },
      stdio: ['ignore', log, log],
    });
    ownAgents.push(child);
    await waitFor(
      'the restarted agent to serve',
      async () => {
        if (child.exitCode !== null) throw new Error(`the agent exited with ${child.exitCode}`);
        try {
          return (await unixHttp(node.agentSocket, 'GET', '/v1/healthz')).status === 200 ? true : undefined;
        } catch {
          return undefined;
        }
      },
      60_000,
    );
  }

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--instance-type',
      't3.medium',
      '--agent-env',
      'WARM_IP_TARGET=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
    ]);
    node = lab.nodes[0]!;
    const records = await readRecords(layout().files.pidsDir);
    supervisor = records.find((r) => r.role === 'supervisor');
    const agent = records.find((r) => r.role === `agent-${node.name}`);
    if (supervisor === undefined || agent === undefined)
      throw new Error('the lab records no supervisor or agent');
    launch = await processLaunch(agent.pid);
    process.kill(supervisor.pid, 'SIGSTOP');
  });
  after(async () => {
    // Only the agents this suite started, by their PID; then the supervisor runs again.
    for (const a of ownAgents) if (a.exitCode === null && a.pid !== undefined) process.kill(a.pid);
    if (supervisor !== undefined && isRecordedProcessAlive(supervisor))
      process.kill(supervisor.pid, 'SIGCONT');
    await deletePodNetns(running.map((r) => r.pod));
    await labDown(name);
  });

  test('pods started with secondary IPs keep them after the switch to prefixes; new pods get /28 addresses', async () => {
    const first = await startPods(3);
    const cloud = await enis();
    for (const r of first) {
      assert.ok(
        cloud.some((e) => e.secondaryIps.includes(r.ip)),
        `${r.ip} is a secondary IP`,
      );
    }
    await everyPodKeepsItsAddress('before the switch');

    await restartAgent({ ENABLE_PREFIX_DELEGATION: 'true' });
    await everyPodKeepsItsAddress('after the switch to prefixes');
    const added = await startPods(2);
    const now = await enis();
    for (const r of added)
      assert.ok(inIpv4Prefixes(r.ip, now), `${r.ip} (a pod after the switch) is in a /28`);
    await everyPodKeepsItsAddress('with new pods in prefixes');
  });

  test('switching back to secondary IPs: every pod, from either mode, keeps its address and traffic', async () => {
    await restartAgent({ ENABLE_PREFIX_DELEGATION: 'false' });
    await everyPodKeepsItsAddress('after the switch back');
    const [late] = await startPods(1);
    assert.ok(late !== undefined);
    assert.ok(
      await reaches(late.pod.netnsName, lab.vpcHosts[0]!.ip),
      'a pod started after the switch back works',
    );
    await everyPodKeepsItsAddress('with a pod started after the switch back');
  });
});
