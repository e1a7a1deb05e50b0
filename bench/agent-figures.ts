// Section "service": the agent's own ADD service time (from its /v1/state, measured inside the
// agent from request to answer, plugin exec excluded) with a burst of concurrent ADDs in flight.
// The agent keeps one window of samples per command since it started, so the section restarts it
// first: the window then holds exactly this burst's ADDs.
import { agentState, type LabNodeDesc } from '../test/lab-fixture.ts';
import { arrivalSpread, loggedOperations, phaseSplit } from './agent-log.ts';
import { cpuTime, restartAgent } from './agent-process.ts';
import { percentile } from './stats.ts';
import { createSandboxes, runPodCommand, type Target, timedBurst } from './targets.ts';

/** What the agent reports per command (src/agent/stats.ts); p99Ms only where the agent has it. */
interface CommandFigures {
  readonly ok: number;
  readonly failed: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms?: number;
  readonly maxMs: number;
}

async function commandFigures(node: LabNodeDesc, command: string): Promise<CommandFigures | undefined> {
  const state = (await agentState(node)) as unknown as { operations?: Record<string, CommandFigures> };
  return state.operations?.[command];
}

export interface ServiceTime {
  readonly inFlight: number;
  readonly samples: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  /** The agent's p99, or its maximum when it has no p99 and holds <= 100 samples (the same by nearest rank). */
  readonly p99Ms: number | undefined;
  readonly burstAddWallMs: number;
  /** Service time of the burst's ADDs as the bench saw them from outside (plugin exec included). */
  readonly runtimeP50Ms: number;
  /** When the ADDs reached the agent, from the first: p50 and the whole spread (agent log). */
  readonly arrival: { readonly p50Ms: number; readonly spreadMs: number };
  /** Each phase's p50/p95 in ms, as the agent logged them. */
  readonly phases: string;
  /** CPU the agent used during the burst (10 ms ticks): all its threads, and its main thread. */
  readonly agentCpu: { readonly processMs: number; readonly mainThreadMs: number };
}

export async function measureServiceTime(
  t: Target,
  node: LabNodeDesc,
  netnsPrefix: string,
  inFlight: number,
  agentLog: string,
): Promise<ServiceTime> {
  const { newPid } = await restartAgent(node);
  const sandboxes = await createSandboxes(netnsPrefix, inFlight);
  try {
    const ids = Array.from({ length: inFlight }, (_, i) => i);
    const cpuBefore = await cpuTime(newPid);
    const { wallMs: burstAddWallMs, perPod } = await timedBurst(
      t,
      'ADD',
      ids.map((i) => ({ containerId: `svc${i}`, netnsPath: sandboxes.path(i) })),
    );
    const cpuAfter = await cpuTime(newPid);
    const add = await commandFigures(node, 'ADD');
    const logged = await loggedOperations(agentLog, 'attached', (id) => /^svc\d+$/.test(id));
    await Promise.all(ids.map((i) => runPodCommand(t, 'DEL', `svc${i}`, sandboxes.path(i))));
    if (add === undefined) throw new Error('the agent reports no ADD figures in /v1/state operations');
    const samples = add.ok + add.failed;
    if (samples !== inFlight) {
      throw new Error(
        `the restarted agent counted ${samples} ADDs, expected exactly the burst's ${inFlight}`,
      );
    }
    const p99Ms = add.p99Ms ?? (samples <= 100 ? add.maxMs : undefined);
    return {
      inFlight,
      samples,
      p50Ms: add.p50Ms,
      p95Ms: add.p95Ms,
      p99Ms,
      burstAddWallMs,
      runtimeP50Ms: percentile(perPod, 50),
      // The log holds every restart's lines: the last burst's are the last ones.
      arrival: arrivalSpread(logged.slice(-inFlight)),
      phases: phaseSplit(logged.slice(-inFlight)),
      agentCpu: {
        processMs: cpuAfter.processMs - cpuBefore.processMs,
        mainThreadMs: cpuAfter.mainThreadMs - cpuBefore.mainThreadMs,
      },
    };
  } finally {
    await sandboxes.remove();
  }
}
