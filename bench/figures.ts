// From each section's measurements to the goal figures (goals-table.ts) and to the
// section's own lines, printed before the table as context ("before" figures keep their old shape).
import type { ServiceTime } from './agent-figures.ts';
import type { OpsSeries } from './cni-ops.ts';
import type { CriFigures } from './cri-sandbox.ts';
import type { FillLevel, FillUp } from './fill-up.ts';
import type { Figure } from './goals-table.ts';
import { percentile } from './stats.ts';

export interface OpsResult {
  readonly pods: number;
  readonly burst: number;
  readonly vpcnet: OpsSeries;
  readonly reference: OpsSeries;
  readonly versionMs: { readonly vpcnet: number; readonly typescript: number; readonly reference: number };
  /** The agent's own figures after the section, as /v1/state reports them. */
  readonly agentLine: string;
}

const p50 = (xs: readonly number[]) => percentile(xs, 50);
const p95 = (xs: readonly number[]) => percentile(xs, 95);

function row(label: string, v: number, r: number): string {
  return `  ${label.padEnd(34)} ${v.toFixed(1).padStart(9)} ${r.toFixed(1).padStart(9)} ${(v / r).toFixed(2).padStart(7)}x`;
}

export function opsLines(o: OpsResult): string[] {
  const v = o.vpcnet;
  const r = o.reference;
  return [
    `ops: pods=${o.pods} burst=${o.burst} (ms; wall time per runtime call, exec included)`,
    `  ${''.padEnd(34)} ${'vpcnet'.padStart(9)} ${'reference'.padStart(9)} ${'ratio'.padStart(8)}`,
    row('ADD p50', p50(v.add), p50(r.add)),
    row('ADD p95', p95(v.add), p95(r.add)),
    row('DEL p50', p50(v.del), p50(r.del)),
    row('DEL p95', p95(v.del), p95(r.del)),
    row(`burst of ${o.burst} ADDs, wall`, v.burstAddWallMs, r.burstAddWallMs),
    row(`burst of ${o.burst} DELs, wall`, v.burstDelWallMs, r.burstDelWallMs),
    row('VERSION exec p50 (process start)', o.versionMs.vpcnet, o.versionMs.reference),
    row('  same, TypeScript forwarder', o.versionMs.typescript, o.versionMs.reference),
    `  ${o.agentLine}`,
  ];
}

export function opsFigures(o: OpsResult): Figure[] {
  const v = o.vpcnet;
  const r = o.reference;
  return [
    { name: 'ADD p50', unit: 'ms', value: p50(v.add), reference: p50(r.add), goal: { ratioAtMost: 0.6 } },
    { name: 'ADD p95', unit: 'ms', value: p95(v.add), reference: p95(r.add), goal: { ratioAtMost: 0.8 } },
    { name: 'DEL p50', unit: 'ms', value: p50(v.del), reference: p50(r.del), goal: { ratioAtMost: 1.0 } },
    {
      name: `burst of ${o.burst} ADDs, wall`,
      unit: 'ms',
      value: v.burstAddWallMs,
      reference: r.burstAddWallMs,
      goal: { ratioAtMost: 0.8 },
    },
    {
      name: `burst of ${o.burst} DELs, wall`,
      unit: 'ms',
      value: v.burstDelWallMs,
      reference: r.burstDelWallMs,
      goal: { ratioAtMost: 0.8 },
    },
  ];
}

/** One burst's lines: its figures, where its ADDs' time went, and the agent's CPU. */
function burstLines(s: ServiceTime, n: number): string[] {
  const p99 = s.p99Ms === undefined ? 'n/a' : s.p99Ms.toFixed(2);
  return [
    `  burst ${n}: p50 ${s.p50Ms.toFixed(2)} ms  p95 ${s.p95Ms.toFixed(2)} ms  p99 ${p99} ms;` +
      ` seen by the runtime: p50 ${s.runtimeP50Ms.toFixed(1)} ms, burst wall ${s.burstAddWallMs.toFixed(0)} ms`,
    `    arrivals at the agent: p50 ${s.arrival.p50Ms.toFixed(1)} ms after the first, all within ${s.arrival.spreadMs.toFixed(1)} ms`,
    `    phases p50/p95 (ms): ${s.phases}`,
    `    agent CPU during the burst (10 ms ticks): ${s.agentCpu.processMs.toFixed(0)} ms,` +
      ` of it its main thread ${s.agentCpu.mainThreadMs.toFixed(0)} ms`,
  ];
}

/**
 * The service figures of several bursts: the median burst's p50 and p99 (one burst's 50 samples
 * make a noisy estimate; its p99 is its slowest ADD). undefined when a burst has no p99.
 */
export function serviceMedians(bursts: readonly ServiceTime[]): { p50Ms: number; p99Ms: number | undefined } {
  const p99s = bursts.map((s) => s.p99Ms);
  const known = p99s.filter((v): v is number => v !== undefined);
  return {
    p50Ms: p50(bursts.map((s) => s.p50Ms)),
    p99Ms: known.length === p99s.length ? p50(known) : undefined,
  };
}

export function serviceLines(bursts: readonly ServiceTime[]): string[] {
  const first = bursts[0];
  if (first === undefined) return [];
  const m = serviceMedians(bursts);
  return [
    `service: agent-side ADD service time, ${first.inFlight} ADDs in flight on a freshly restarted agent,` +
      ` ${bursts.length} bursts of ${first.samples} samples (ms)`,
    ...bursts.flatMap((s, i) => burstLines(s, i + 1)),
    `  median over the bursts: p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms === undefined ? 'n/a' : m.p99Ms.toFixed(2)} ms`,
  ];
}

export function serviceFigures(bursts: readonly ServiceTime[]): Figure[] {
  const first = bursts[0];
  if (first === undefined) return [];
  const m = serviceMedians(bursts);
  const of = bursts.length === 1 ? 'one burst' : `median of ${bursts.length} bursts`;
  const note = `${first.inFlight} in flight, ${of}`;
  return [
    { name: 'agent ADD service p50', unit: 'ms', value: m.p50Ms, goal: { atMost: 4 }, note },
    { name: 'agent ADD service p99', unit: 'ms', value: m.p99Ms, goal: { atMost: 20 }, note },
  ];
}

/** p50 at a level over p50 at the first, raw and against the reference measured alongside. */
function fillRatios(first: FillLevel, l: FillLevel) {
  const rise = (v: readonly number[], v1: readonly number[]) => p50(v) / p50(v1);
  const add = rise(l.add, first.add);
  const del = rise(l.del, first.del);
  return {
    add,
    del,
    addVsRef: add / rise(l.reference.add, first.reference.add),
    delVsRef: del / rise(l.reference.del, first.reference.del),
  };
}

const FILL_HEADS = [
  'ADD p50',
  'ADD p95',
  'DEL p50',
  'DEL p95',
  'refADD',
  'refDEL',
  'ADD/1st',
  'DEL/1st',
  'ADD/ref',
  'DEL/ref',
  'RSS MiB',
];

export function fillLines(f: FillUp): string[] {
  const first = f.levels[0];
  if (first === undefined) return [];
  const lines = [
    `fill: ADD and DEL as the node fills, ${first.add.length} ADD+DEL pairs per level, half on the way up, half down` +
      ' (ms, wall time per runtime call, exec included; refADD/refDEL: the reference, alongside, its node empty;' +
      " x/1st: p50 over the first level's; x/ref: the same over the reference's)",
    `  ${'attachments'.padStart(11)} ${FILL_HEADS.map((h) => h.padStart(8)).join(' ')}`,
  ];
  for (const l of f.levels) {
    const r = fillRatios(first, l);
    const ms = [p50(l.add), p95(l.add), p50(l.del), p95(l.del), p50(l.reference.add), p50(l.reference.del)];
    const cells = [
      ...ms.map((c) => c.toFixed(1)),
      ...[r.add, r.del, r.addVsRef, r.delVsRef].map((x) => `${x.toFixed(2)}x`),
      l.memory.rssMiB.toFixed(1),
    ];
    lines.push(`  ${String(l.attachments).padStart(11)} ${cells.map((c) => c.padStart(8)).join(' ')}`);
  }
  const r = f.restart;
  lines.push(
    `  restart with ${f.attachmentsAfterRestart} attachments: start-to-serving ${r.startToServingMs.toFixed(0)} ms` +
      ` (SIGTERM to serving ${r.signalToServingMs.toFixed(0)} ms, supervisor delay included);` +
      ` RSS before ${f.memory.rssMiB.toFixed(1)} MiB (peak ${f.memory.peakMiB.toFixed(1)}),` +
      ` after ${f.memoryAfterRestart.rssMiB.toFixed(1)} MiB`,
  );
  return lines;
}

export function fillFigures(f: FillUp): Figure[] {
  const first = f.levels[0];
  const last = f.levels[f.levels.length - 1];
  if (first === undefined || last === undefined) return [];
  const r = fillRatios(first, last);
  const name = (op: string) => `${op} p50@${last.attachments} / p50@${first.attachments}`;
  const vs = (a: readonly number[], b: readonly number[]) =>
    `${p50(a).toFixed(1)} vs ${p50(b).toFixed(1)} ms`;
  return [
    { name: name('ADD'), unit: 'x', value: r.add, goal: { atMost: 1.2 }, note: vs(last.add, first.add) },
    { name: '  same, over the reference alongside', unit: 'x', value: r.addVsRef },
    { name: name('DEL'), unit: 'x', value: r.del, goal: { atMost: 1.2 }, note: vs(last.del, first.del) },
    { name: '  same, over the reference alongside', unit: 'x', value: r.delVsRef },
    {
      name: `agent RSS with ${last.attachments} attachments`,
      unit: 'MiB',
      value: f.memory.rssMiB,
      goal: { atMost: 80 },
    },
    {
      name: `start-to-serving with ${f.attachmentsAfterRestart} attachments`,
      unit: 'ms',
      value: f.restart.startToServingMs,
      goal: { atMost: 1000 },
    },
  ];
}

export function criLines(c: CriFigures): string[] {
  const n = c.vpcnet.run.length;
  return [
    `cri: ${c.runtime}, ${n} sandboxes each over the CRI API (ms)`,
    `  ${''.padEnd(34)} ${'vpcnet'.padStart(9)} ${'reference'.padStart(9)} ${'ratio'.padStart(8)}`,
    row('RunPodSandbox p50', p50(c.vpcnet.run), p50(c.reference.run)),
    row('RunPodSandbox p95', p95(c.vpcnet.run), p95(c.reference.run)),
    row('Stop+RemovePodSandbox p50', p50(c.vpcnet.stopRemove), p50(c.reference.stopRemove)),
  ];
}

export function criFigures(c: CriFigures): Figure[] {
  return [
    {
      name: 'containerd RunPodSandbox p50',
      unit: 'ms',
      value: p50(c.vpcnet.run),
      reference: p50(c.reference.run),
      goal: { ratioAtMost: 1.0 },
    },
    {
      name: 'containerd Stop+RemovePodSandbox p50',
      unit: 'ms',
      value: p50(c.vpcnet.stopRemove),
      reference: p50(c.reference.stopRemove),
    },
  ];
}
