// Section "fill": does an operation cost more as the node fills? Pods are added and kept until the
// agent's ledger holds each level's number of attachments; at each level a batch of ADD+DEL pairs
// (new pods, removed again) is timed as a runtime sees it. The levels are measured on the way up
// and again on the way down (kept pods removed), half the pairs each time, so that a drift in the
// shared machine's load does not read as a slope; each vpcnet pair takes turns with a pair of the
// reference (whose node stays empty), a gauge of the machine's load at that moment. At the top the
// agent's RSS is read; at the end the node is filled again and the agent restarted, timing
// start-to-serving with a full ledger.
import { agentState, type LabNodeDesc } from '../test/lab-fixture.ts';
import {
  type AgentRestart,
  agentPid,
  type ProcessMemory,
  processMemory,
  restartAgent,
} from './agent-process.ts';
import { createSandboxes, runPodCommand, type Sandboxes, type Target, timedPodCommand } from './targets.ts';

export interface FillLevel {
  readonly attachments: number;
  readonly add: readonly number[];
  readonly del: readonly number[];
  /** The reference's pairs, taken in turn with vpcnet's at this level. */
  readonly reference: FillSamples;
  /** On the way up, after the level's pairs. */
  readonly memory: ProcessMemory;
}

export interface FillUp {
  readonly levels: readonly FillLevel[];
  /** Full again after the whole sweep, just before the restart. */
  readonly memory: ProcessMemory;
  readonly restart: AgentRestart;
  /** The restarted agent's, with the same attachments. */
  readonly memoryAfterRestart: ProcessMemory;
  readonly attachmentsAfterRestart: number;
}

async function attachmentCount(node: LabNodeDesc): Promise<number> {
  return (await agentState(node)).attachments.length;
}

/** The pods kept while a level is measured: ADDed from index 0 up, DELed from the top down. */
class KeptPods {
  count = 0;
  constructor(
    private readonly t: Target,
    private readonly sandboxes: Sandboxes,
  ) {}

  async setTo(n: number): Promise<void> {
    for (; this.count < n; this.count++) {
      await runPodCommand(this.t, 'ADD', `kept${this.count}`, this.sandboxes.path(this.count));
    }
    for (; this.count > n; this.count--) {
      await runPodCommand(this.t, 'DEL', `kept${this.count - 1}`, this.sandboxes.path(this.count - 1));
    }
  }
}

/** Where one side's pairs run: its target and a namespace per pair. */
interface PairSide {
  readonly t: Target;
  readonly probes: Sandboxes;
}

async function measurePair(side: PairSide, id: string, j: number, into: FillSamples): Promise<void> {
  into.add.push(await timedPodCommand(side.t, 'ADD', id, side.probes.path(j)));
  into.del.push(await timedPodCommand(side.t, 'DEL', id, side.probes.path(j)));
}

export interface FillSamples {
  readonly add: number[];
  readonly del: number[];
}

export async function measureFillUp(
  t: Target,
  reference: Target,
  node: LabNodeDesc,
  netnsPrefix: string,
  levelList: readonly number[],
  pairs: number,
): Promise<FillUp> {
  const levels = [...new Set(levelList)].sort((a, b) => a - b);
  const top = levels[levels.length - 1] ?? 0;
  const start = await attachmentCount(node);
  if (start !== 0) throw new Error(`fill-up needs an empty node; the agent holds ${start} attachments`);
  const upPairs = Math.ceil(pairs / 2);
  const kept = await createSandboxes(`${netnsPrefix}k`, top);
  const keptPods = new KeptPods(t, kept);
  const probes = await createSandboxes(`${netnsPrefix}p`, upPairs);
  const refProbes = await createSandboxes(`${netnsPrefix}r`, upPairs).catch(async (err: unknown) => {
    await probes.remove();
    throw err;
  });
  const vpcnet: PairSide = { t, probes };
  const ref: PairSide = { t: reference, probes: refProbes };
  try {
    const samples = new Map<number, FillSamples>(levels.map((l) => [l, { add: [], del: [] }]));
    const refSamples = new Map<number, FillSamples>(levels.map((l) => [l, { add: [], del: [] }]));
    const memoryAt = new Map<number, ProcessMemory>();
    const measureAt = async (level: number, way: 'up' | 'down', n: number) => {
      await keptPods.setTo(level);
      const attachments = await attachmentCount(node);
      if (attachments !== level) throw new Error(`kept ${level} pods but the agent holds ${attachments}`);
      process.stderr.write(`  fill: ${level} attachments, ${n} ADD+DEL pairs (${way})...\n`);
      for (let j = 0; j < n; j++) {
        const id = `probe${level}${way}x${j}`;
        for (const side of j % 2 === 0 ? [vpcnet, ref] : [ref, vpcnet]) {
          await measurePair(side, id, j, (side === ref ? refSamples : samples).get(level)!);
        }
      }
    };
    for (const level of levels) {
      await measureAt(level, 'up', upPairs);
      memoryAt.set(level, await processMemory(await agentPid(node)));
    }
    for (const level of [...levels].reverse()) await measureAt(level, 'down', pairs - upPairs);
    await keptPods.setTo(top);
    const memory = await processMemory(await agentPid(node));
    const restart = await restartAgent(node);
    return {
      levels: levels.map((l) => ({
        attachments: l,
        ...samples.get(l)!,
        reference: refSamples.get(l)!,
        memory: memoryAt.get(l)!,
      })),
      memory,
      restart,
      memoryAfterRestart: await processMemory(restart.newPid),
      attachmentsAfterRestart: await attachmentCount(node),
    };
  } finally {
    await probes.remove();
    await refProbes.remove();
    await keptPods.setTo(0).catch(() => undefined);
    await kept.remove();
  }
}
