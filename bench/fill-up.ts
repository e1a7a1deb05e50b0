// Section "fill": does an operation cost more as the node fills? Pods are added and kept until the
// agent's ledger holds each level's number of attachments; at each level a batch of ADD+DEL pairs
// (new pods, removed again) is timed as a runtime sees it. At the last level the agent's RSS is
// read and the agent restarted, timing start-to-serving with that many attachments in its ledger.
import { agentState, type LabNodeDesc } from '../test/lab-fixture.ts';
import {
  type AgentRestart,
  agentPid,
  type ProcessMemory,
  processMemory,
  restartAgent,
} from './agent-process.ts';
import { timed } from './stats.ts';
import { createSandboxes, runPodCommand, type Sandboxes, type Target } from './targets.ts';

export interface FillLevel {
  readonly attachments: number;
  readonly add: readonly number[];
  readonly del: readonly number[];
  readonly memory: ProcessMemory;
}

export interface FillUp {
  readonly levels: readonly FillLevel[];
  /** At the last level, before the restart. */
  readonly memory: ProcessMemory;
  readonly restart: AgentRestart;
  /** The restarted agent's, with the same attachments. */
  readonly memoryAfterRestart: ProcessMemory;
  readonly attachmentsAfterRestart: number;
}

async function attachmentCount(node: LabNodeDesc): Promise<number> {
  return (await agentState(node)).attachments.length;
}

async function measureLevel(t: Target, probes: Sandboxes, level: number, pairs: number) {
  const add: number[] = [];
  const del: number[] = [];
  for (let j = 0; j < pairs; j++) {
    const id = `probe${level}x${j}`;
    add.push(await timed(() => runPodCommand(t, 'ADD', id, probes.path(j))));
    del.push(await timed(() => runPodCommand(t, 'DEL', id, probes.path(j))));
  }
  return { add, del };
}

export async function measureFillUp(
  t: Target,
  node: LabNodeDesc,
  netnsPrefix: string,
  levels: readonly number[],
  pairs: number,
): Promise<FillUp> {
  const top = Math.max(...levels);
  const start = await attachmentCount(node);
  if (start !== 0) throw new Error(`fill-up needs an empty node; the agent holds ${start} attachments`);
  // The kept pods stay until `lab down` removes their namespaces with the lab (their netns names
  // carry the lab's prefix); probes are reused across levels (each pair DELs before the next ADD).
  const kept = await createSandboxes(`${netnsPrefix}k`, top);
  const probes = await createSandboxes(`${netnsPrefix}p`, pairs);
  try {
    const measured: FillLevel[] = [];
    let filled = 0;
    for (const level of [...levels].sort((a, b) => a - b)) {
      for (; filled < level; filled++) await runPodCommand(t, 'ADD', `kept${filled}`, kept.path(filled));
      const attachments = await attachmentCount(node);
      if (attachments !== level)
        throw new Error(`filled to ${level} pods but the agent holds ${attachments}`);
      process.stderr.write(`  fill: ${level} attachments, ${pairs} ADD+DEL pairs...\n`);
      const { add, del } = await measureLevel(t, probes, level, pairs);
      measured.push({ attachments, add, del, memory: await processMemory(await agentPid(node)) });
    }
    const memory = await processMemory(await agentPid(node));
    const restart = await restartAgent(node);
    return {
      levels: measured,
      memory,
      restart,
      memoryAfterRestart: await processMemory(restart.newPid),
      attachmentsAfterRestart: await attachmentCount(node),
    };
  } finally {
    await probes.remove();
    for (let i = 0; i < top; i++)
      await runPodCommand(t, 'DEL', `kept${i}`, kept.path(i)).catch(() => undefined);
    await kept.remove();
  }
}
