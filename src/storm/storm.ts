// One storm, start to end: a lab of its own (`vpcnetctl lab up`, one node), the plan drawn from
// the seed, the runner, and the lab removed afterwards, also on failure.
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runToSuccess } from '../infra/process.ts';
import { readConfList } from '../lab/cni-runtime.ts';
import { type LabDescription, labLayout } from '../lab/layout.ts';
import { unixJson } from '../lab/unix-http.ts';
import { labDown } from '../lab/verbs/down.ts';
import { type PlanOptions, stormPlan } from './plan.ts';
import { type StormFigures, StormRunner } from './runner.ts';
import { StormRuntime } from './runtime.ts';
import { type TaintFigures, watchTaint } from './taint-watch.ts';

export interface StormOptions extends PlanOptions {
  readonly labName: string;
  /** A lab with pods that have security groups (--pod-eni on an m5.large). */
  readonly sgPods: boolean;
  readonly instanceType: string | undefined;
  /** Leave the lab up after the storm (to look at it); `lab down --name` removes it later. */
  readonly keepLab: boolean;
  /** VPCNET_NODE_READINESS=taint on the node, and the taint watched for false taints (taint-watch.ts). */
  readonly readinessTaint?: boolean;
  /** More of the agent's settings (`NAME=VALUE`), as `vpcnetctl lab up --agent-env` takes them. */
  readonly agentEnv?: readonly string[];
  readonly log: (line: string) => void;
}

export interface StormOutcome {
  readonly figures: StormFigures;
  /** One line per step (and what came of it): replays the storm with the same seed. */
  readonly opLog: readonly string[];
  /** With `readinessTaint`: the taint's applications and false taints during the storm. */
  readonly taints?: TaintFigures;
}

/** 3 ENIs of 10 addresses: room for the churn of a storm while freed addresses cool down (30 s). */
const DEFAULT_INSTANCE_TYPE = 'm5.large';
const repoRoot = resolve(import.meta.dirname, '..', '..');

async function labUp(o: StormOptions): Promise<LabDescription> {
  const args = ['lab', 'up', '--name', o.labName, '--detach', '--json'];
  args.push('--instance-type', o.instanceType ?? DEFAULT_INSTANCE_TYPE);
  if (o.sgPods) args.push('--pod-eni');
  if (o.readinessTaint === true) args.push('--agent-env', 'VPCNET_NODE_READINESS=taint');
  for (const e of o.agentEnv ?? []) args.push('--agent-env', e);
  const out = await runToSuccess([process.execPath, join(repoRoot, 'bin', 'vpcnetctl'), ...args]);
  return JSON.parse(out.stdout) as LabDescription;
}

export async function runStorm(o: StormOptions): Promise<StormOutcome> {
  const plan = stormPlan(o);
  const description = await labUp(o);
  try {
    const node = description.nodes[0];
    const host = description.vpcHosts[0];
    if (node === undefined || host === undefined)
      throw new Error(`lab ${o.labName} has no node or no VPC host`);
    const layout = labLayout(o.labName, 1);
    const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    const prefix = list.plugins[0]?.vethPrefix;
    const runtime = new StormRuntime(
      { name: o.labName, node, adminSocket: layout.emulator.adminSocket, pidsDir: layout.files.pidsDir },
      o.log,
    );
    const runner = new StormRunner({
      lab: {
        nodeNetns: node.netns,
        agentSocket: node.agentSocket,
        adminSocket: layout.emulator.adminSocket,
        vpcHostIp: host.ip,
        vethPrefix: typeof prefix === 'string' ? prefix : 'vpc',
      },
      runtime,
      seed: o.seed,
      log: o.log,
    });
    if (o.sgPods) await waitForTrunk(layout.emulator.adminSocket, node.name);
    const watch =
      o.readinessTaint === true
        ? await watchTaint({
            adminSocket: layout.emulator.adminSocket,
            agentSocket: node.agentSocket,
            nodeName: node.name,
            emulatorLog: layout.files.emulatorLog,
          })
        : undefined;
    let figures: StormFigures;
    try {
      figures = await runner.run(plan);
    } catch (err) {
      await watch?.stop();
      throw err;
    }
    // The pods are gone: their addresses' cooldown (30 s) ends, and the taint must go with it.
    const taints: TaintFigures | undefined = await watch?.stop(45_000);
    return { figures, opLog: runner.opLog, ...(taints === undefined ? {} : { taints }) };
  } finally {
    if (!o.keepLab) await labDown(o.labName);
  }
}

async function waitForTrunk(adminSocket: string, node: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const n = (await unixJson(adminSocket, 'GET', `/api/v1/nodes/${node}`)) as {
      metadata: { labels?: Record<string, string> };
    };
    if (n.metadata.labels?.['vpc.amazonaws.com/has-trunk-attached'] === 'true') return;
    if (Date.now() > deadline) throw new Error(`node ${node} got no trunk ENI in 60 s`);
    await sleep(200);
  }
}

export function formatTaints(t: TaintFigures): string {
  return [
    `ip-exhausted taints applied: ${t.applied} (${t.taintWrites} taint writes in the API log)`,
    `false taints: ${t.falseTaints}`,
    ...t.details,
    ...t.episodes,
  ].join('\n');
}

export function formatFigures(f: StormFigures): string {
  const perStart = f.podStarts === 0 ? 'n/a' : (f.ec2Calls / f.podStarts).toFixed(2);
  return [
    `pods: ${f.pods}`,
    `operations: ${f.operations}`,
    `pod starts (sandbox ADDs): ${f.podStarts}`,
    `agent kills survived: ${f.killsSurvived}`,
    `faults injected: ${f.faultsInjected}`,
    `invariant violations: ${f.violations.length}`,
    `EC2 calls per pod start: ${perStart} (${f.ec2Calls} calls)`,
    `wall time: ${(f.wallMs / 1000).toFixed(1)} s`,
  ].join('\n');
}
