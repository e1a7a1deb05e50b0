// A pod that floods its own network namespace does not stall the node's agent: in a one-node lab
// whose agent reconciles every second, one pod adds 300,000 routes through its eth0 (what a pod
// with NET_ADMIN may do), and other pods are added meanwhile through the installed plugin. Reported
// and held to bounds, with slack for a noisy 2-core machine: the agent's event-loop CPU time per
// reconcile pass, the other pods' ADD latency during passes, the agent's peak RSS against the
// DaemonSet's memory request (deploy/), the helper's peak RSS, and the flooded pod named in the
// pass's findings. The agent is then restarted: its start-up pass reads the flooded namespace
// before it serves.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { agentPid, cpuTime, processMemory, restartAgent } from '../../bench/agent-process.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { render } from '../deploy/deploy-render.ts';
import {
  addPod,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  sh,
  uniqueLabName,
} from '../lab-fixture.ts';

const FLOOD = 300_000;
/** The agent's event-loop (main thread) CPU time per reconcile pass with the flooded pod: the goal. */
const PASS_MAIN_THREAD_MS = 50;
/** Another pod's ADD through the plugin, during passes (a quiet lab: ~20-60 ms); slack for a busy host. */
const ADD_P99_MS = 500;

/** The agent's netlink helper: its child process named vpcnet-netlink. */
async function helperPid(agent: number): Promise<number> {
  for (const task of await readdir(`/proc/${agent}/task`)) {
    const children = (await readFile(`/proc/${agent}/task/${task}/children`, 'utf8')).trim().split(/\s+/);
    for (const c of children.filter((x) => x !== '')) {
      if ((await readFile(`/proc/${c}/comm`, 'utf8')).trim() === 'vpcnet-netlink') return Number(c);
    }
  }
  throw new Error(`agent ${agent} has no vpcnet-netlink child`);
}

/** The agent container's memory request in deploy/ (e.g. "80Mi"), in MiB. */
async function memoryRequestMiB(): Promise<number> {
  const ds = (await render('base')).daemonSet;
  const agent = ds.spec?.template.spec?.containers.find((c) => c.name === 'vpcnet');
  const request = String(agent?.resources?.requests?.memory ?? '');
  const m = /^(\d+)Mi$/.exec(request);
  if (!m) throw new Error(`the agent's memory request in deploy/ is ${JSON.stringify(request)}, not <n>Mi`);
  return Number(m[1]);
}

const METRICS_PORT = 61678;

/** Reconcile passes so far and their wall time in all (the agent's metrics, read inside the node). */
async function passTotals(node: LabNodeDesc): Promise<{ count: number; seconds: number }> {
  const script = `const r = await fetch(process.argv[1]); process.stdout.write(await r.text());`;
  const url = `http://127.0.0.1:${METRICS_PORT}/metrics`;
  const text = await sh([
    'ip',
    'netns',
    'exec',
    node.netns,
    process.execPath,
    '--input-type=module',
    '-e',
    script,
    url,
  ]);
  const total = (metric: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${metric}{`) || l.startsWith(`${metric} `))
      .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
  return {
    count: total('vpcnet_reconcile_pass_duration_seconds_count'),
    seconds: total('vpcnet_reconcile_pass_duration_seconds_sum'),
  };
}

type LogLine = { msg?: string; time?: string; [k: string]: unknown };

async function logLines(file: string): Promise<LogLine[]> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

describe('a pod flooding its own namespace does not stall the agent', () => {
  const name = uniqueLabName('fl');
  let lab: LabDesc;
  let node: LabNodeDesc;

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--instance-type',
      'm5.large',
      '--agent-env',
      'VPCNET_RECONCILE_SECONDS=1',
      '--agent-env',
      'WARM_IP_TARGET=24',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  test('with 300,000 routes in one pod, passes cost the agent little, other pods ADD at their usual pace, memory stays under the request, and the pass names the pod', {
    timeout: 600_000,
  }, async (t) => {
    const agentLog = labLayout(name, 1).nodes[0]!.agentLog;
    const requestMiB = await memoryRequestMiB();
    const flooded = await newPod(name, 'flood');
    await addPod(node, flooded);
    const dir = await mkdtemp(join(tmpdir(), 'fl-'));
    try {
      const lines: string[] = [];
      for (let i = 0; i < FLOOD; i++)
        lines.push(`route add 100.${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 dev eth0`);
      await writeFile(join(dir, 'routes'), `${lines.join('\n')}\n`);
      await sh(['ip', '-n', flooded.netnsName, '-batch', join(dir, 'routes')]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const agent = await agentPid(node);
    // Passes with the flood in place before measuring.
    await new Promise((r) => setTimeout(r, 3000));

    // Quiet passes: the agent's CPU time per pass while the only work is reconciling.
    const passes0 = await passTotals(node);
    const cpu0 = await cpuTime(agent);
    await new Promise((r) => setTimeout(r, 8000));
    const cpu1 = await cpuTime(agent);
    const passes1 = await passTotals(node);
    const passes = passes1.count - passes0.count;
    const perPass = (ms: number) => ms / Math.max(1, passes);
    const mainThread = perPass(cpu1.mainThreadMs - cpu0.mainThreadMs);
    const wholeProcess = perPass(cpu1.processMs - cpu0.processMs);
    const passWallMs = perPass((passes1.seconds - passes0.seconds) * 1000);
    t.diagnostic(
      `${passes} passes in 8 s; a pass: agent main thread ${mainThread.toFixed(1)} ms, all threads ${wholeProcess.toFixed(1)} ms of CPU, ${passWallMs.toFixed(0)} ms wall`,
    );

    // Other pods' ADDs while passes run.
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const pod = await newPod(name, `p${i}`);
      const start = performance.now();
      await addPod(node, pod);
      latencies.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 300));
    }
    latencies.sort((a, b) => a - b);
    const [p50, p99] = [percentile(latencies, 50), percentile(latencies, 99)];
    const agentPeak = (await processMemory(agent)).peakMiB;
    const helperPeak = (await processMemory(await helperPid(agent))).peakMiB;
    t.diagnostic(
      `other pods' ADD: p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms; agent VmHWM ${agentPeak.toFixed(1)} MiB (request ${requestMiB} MiB); helper VmHWM ${helperPeak.toFixed(1)} MiB`,
    );

    // The start-up pass reads the flooded namespace before the agent serves.
    const restart = await restartAgent(node);
    const restartedPeak = (await processMemory(restart.newPid)).peakMiB;
    t.diagnostic(
      `restarted agent: serving ${restart.startToServingMs.toFixed(0)} ms after its start; VmHWM ${restartedPeak.toFixed(1)} MiB`,
    );

    const finding = (await logLines(agentLog)).find(
      (l) => JSON.stringify(l).includes(flooded.netnsPath) && /more than \d+ routes/.test(JSON.stringify(l)),
    );
    t.diagnostic(`finding: ${JSON.stringify(finding)}`);
    assert.ok(finding !== undefined, "no reconcile pass named the flooded pod's namespace");
    assert.ok(passes >= 5, `only ${passes} reconcile passes ran in 8 s`);
    assert.ok(
      mainThread <= PASS_MAIN_THREAD_MS,
      `a reconcile pass cost the agent's event loop ${mainThread.toFixed(1)} ms of CPU`,
    );
    assert.ok(p99 <= ADD_P99_MS, `other pods' ADD p99 was ${p99.toFixed(0)} ms`);
    assert.ok(agentPeak < requestMiB, `the agent's peak RSS ${agentPeak.toFixed(1)} MiB is over its request`);
    assert.ok(
      restartedPeak < requestMiB,
      `the restarted agent's peak RSS ${restartedPeak.toFixed(1)} MiB is over its request`,
    );
    assert.ok(helperPeak < 16, `the helper's peak RSS is ${helperPeak.toFixed(1)} MiB`);
  });
});
