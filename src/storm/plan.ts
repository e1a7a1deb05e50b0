// The storm's operation sequence: a pure function of the seed and the options. The plan keeps its
// own model of which pods are live, so every operation it emits makes sense when it runs (a
// delete names a live pod, a create a pod that is not), whatever the interleavings inside a step.
import type { FaultSettings } from '../emulator/api.ts';
import { type Prng, seededPrng } from './prng.ts';

/** When the old sandbox's DEL reaches the plugin, relative to the new sandbox's ADD. */
export type StaleDel = 'early' | 'late' | 'concurrent';
/** How the runtime deletes a pod's sandbox: one DEL, the DEL twice, or (namespace already gone) with an empty CNI_NETNS. */
export type DelMode = 'once' | 'duplicate' | 'empty-netns';

export type PodOp =
  | { readonly kind: 'create'; readonly pod: string; readonly sg: boolean; readonly killAfterMs?: number }
  | { readonly kind: 'delete'; readonly pod: string; readonly del: DelMode; readonly killAfterMs?: number }
  | {
      readonly kind: 'replace';
      readonly pod: string;
      readonly staleDel: StaleDel;
      readonly oldNetnsGone: boolean;
    };

export type StormOp =
  | PodOp
  | { readonly kind: 'concurrent'; readonly ops: readonly PodOp[] }
  | { readonly kind: 'kill' }
  | { readonly kind: 'faults'; readonly name: string; readonly settings: FaultSettings };

export interface PlanOptions {
  readonly seed: number;
  /** Most pods live at once. */
  readonly pods: number;
  readonly ops: number;
  /** Share of steps that kill the agent (idle, mid-ADD or mid-DEL). */
  readonly killRate: number;
  /** Share of steps that switch the emulator's faults. */
  readonly faultRate: number;
  /** Share of created pods that have security groups (branch ENIs); 0 without --sg-pods. */
  readonly sgShare: number;
}

/** The faults the storm switches on, one at a time (each "off" step clears them). */
export const FAULTS: readonly { readonly name: string; readonly settings: FaultSettings }[] = [
  { name: 'throttle', settings: { throttleRate: 0.3 } },
  { name: '5xx', settings: { errorRate: 0.2 } },
  { name: 'latency', settings: { latencyMs: 150 } },
  { name: 'stale-ec2', settings: { staleReadMs: 3000 } },
  { name: 'stale-imds', settings: { staleReadMs: 3000, imds: true } },
  { name: 'mixed', settings: { throttleRate: 0.15, errorRate: 0.1, latencyMs: 50, staleReadMs: 1000 } },
];
export const FAULTS_OFF = { kind: 'faults', name: 'off', settings: {} } as const satisfies StormOp;

interface PlanModel {
  readonly live: Map<string, { readonly sg: boolean }>;
  nextPod: number;
  faultsOn: boolean;
}

function createOp(r: Prng, m: PlanModel, o: PlanOptions, killAfterMs?: number): PodOp {
  const pod = `p${m.nextPod++}`;
  const sg = r.chance(o.sgShare);
  m.live.set(pod, { sg });
  return { kind: 'create', pod, sg, ...(killAfterMs === undefined ? {} : { killAfterMs }) };
}

function deleteOp(r: Prng, m: PlanModel, pod: string, killAfterMs?: number): PodOp {
  m.live.delete(pod);
  const del = r.pick<DelMode>(['once', 'once', 'duplicate', 'empty-netns']);
  return { kind: 'delete', pod, del, ...(killAfterMs === undefined ? {} : { killAfterMs }) };
}

function replaceOp(r: Prng, pod: string): PodOp {
  return {
    kind: 'replace',
    pod,
    staleDel: r.pick<StaleDel>(['early', 'late', 'concurrent']),
    oldNetnsGone: r.chance(0.3),
  };
}

/** One operation on a pod, chosen among what the model allows; `busy` pods are taken by this step already. */
function podOp(r: Prng, m: PlanModel, o: PlanOptions, busy: Set<string>): PodOp | undefined {
  const free = [...m.live.keys()].filter((p) => !busy.has(p));
  const choices: ('create' | 'delete' | 'replace')[] = [];
  if (m.live.size < o.pods) choices.push('create', 'create', 'create');
  if (free.length > 0) choices.push('delete', 'delete', 'replace', 'replace');
  if (choices.length === 0) return undefined;
  const choice = r.pick(choices);
  if (choice === 'create') {
    const op = createOp(r, m, o);
    busy.add(op.pod);
    return op;
  }
  const pod = r.pick(free);
  busy.add(pod);
  return choice === 'delete' ? deleteOp(r, m, pod) : replaceOp(r, pod);
}

function killStep(r: Prng, m: PlanModel, o: PlanOptions): StormOp {
  const when = r.pick(['idle', 'add', 'del'] as const);
  // The kill fires this long after the plugin call started, to land while the call is in flight.
  const killAfterMs = r.int(0, 60);
  if (when === 'add' && m.live.size < o.pods) return createOp(r, m, o, killAfterMs);
  if (when === 'del' && m.live.size > 0) return deleteOp(r, m, r.pick([...m.live.keys()]), killAfterMs);
  return { kind: 'kill' };
}

export function stormPlan(o: PlanOptions): StormOp[] {
  const r = seededPrng(o.seed);
  const m: PlanModel = { live: new Map(), nextPod: 1, faultsOn: false };
  const plan: StormOp[] = [];
  while (plan.length < o.ops) {
    if (r.chance(o.killRate)) {
      plan.push(killStep(r, m, o));
      continue;
    }
    if (r.chance(o.faultRate)) {
      // A fault stays on for a few steps: an "off" is likelier while one is on.
      const off = m.faultsOn && r.chance(0.6);
      m.faultsOn = !off;
      plan.push(off ? FAULTS_OFF : { kind: 'faults', ...r.pick(FAULTS) });
      continue;
    }
    const busy = new Set<string>();
    if (r.chance(0.25)) {
      const ops = [
        podOp(r, m, o, busy),
        podOp(r, m, o, busy),
        r.chance(0.5) ? podOp(r, m, o, busy) : undefined,
      ];
      const group = ops.filter((x): x is PodOp => x !== undefined);
      if (group.length > 1) {
        plan.push({ kind: 'concurrent', ops: group });
        continue;
      }
      if (group[0] !== undefined) {
        plan.push(group[0]);
        continue;
      }
    }
    const op = podOp(r, m, o, busy);
    if (op !== undefined) plan.push(op);
  }
  return plan;
}

/** One line per operation, as the operation log prints it. */
export function describeOp(op: StormOp): string {
  switch (op.kind) {
    case 'create':
      return `create ${op.pod}${op.sg ? ' (security groups)' : ''}${op.killAfterMs === undefined ? '' : `, kill agent ${op.killAfterMs} ms into its ADD`}`;
    case 'delete':
      return `delete ${op.pod} (DEL ${op.del})${op.killAfterMs === undefined ? '' : `, kill agent ${op.killAfterMs} ms into its DEL`}`;
    case 'replace':
      return `replace ${op.pod}'s sandbox, old DEL ${op.staleDel}${op.oldNetnsGone ? ' with an empty CNI_NETNS' : ''}`;
    case 'concurrent':
      return `concurrently: ${op.ops.map(describeOp).join(' | ')}`;
    case 'kill':
      return 'kill -9 the agent (idle)';
    case 'faults':
      return `faults ${op.name} ${JSON.stringify(op.settings)}`;
  }
}
