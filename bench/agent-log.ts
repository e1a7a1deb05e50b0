// Where the agent's time went, from its own log: each ADD's "attached" line carries when the ADD
// began (`at`, epoch ms) and how long each phase took (`ms`), each DEL's "detached" line its
// phases (src/agent/cni-ops/add.ts, del.ts). The bench reads the lines of the pods it drove, to print a
// burst's arrival spread and the phase split beside the figures.
import { readFile } from 'node:fs/promises';
import { percentile } from './stats.ts';

export interface LoggedOperation {
  readonly containerId: string;
  /** ADD only: when the agent began it (epoch ms). */
  readonly at: number | undefined;
  readonly ms: Readonly<Record<string, number>>;
}

function parsed(line: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // a line some other writer interleaved
  }
}

function phases(v: unknown): Record<string, number> {
  if (typeof v !== 'object' || v === null) return {};
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, number] => typeof e[1] === 'number'));
}

/** The log's `msg` lines ("attached", "detached") of the container IDs `wanted` accepts. */
export async function loggedOperations(
  logFile: string,
  msg: 'attached' | 'detached',
  wanted: (containerId: string) => boolean,
): Promise<LoggedOperation[]> {
  const out: LoggedOperation[] = [];
  for (const line of (await readFile(logFile, 'utf8')).split('\n')) {
    const o = line.startsWith('{') ? parsed(line) : undefined;
    if (o?.msg !== msg) continue;
    const containerId = (o.key as { containerId?: unknown } | undefined)?.containerId;
    if (typeof containerId !== 'string' || !wanted(containerId)) continue;
    out.push({ containerId, at: typeof o.at === 'number' ? o.at : undefined, ms: phases(o.ms) });
  }
  return out;
}

/** Each phase's p50 and p95 over the operations, in the order the first line names them. */
export function phaseSplit(ops: readonly LoggedOperation[]): string {
  const names = Object.keys(ops[0]?.ms ?? {});
  return names
    .map((n) => {
      const xs = ops.map((o) => o.ms[n] ?? 0);
      return `${n} ${percentile(xs, 50).toFixed(1)}/${percentile(xs, 95).toFixed(1)}`;
    })
    .join(', ');
}

/** When the operations began, relative to the first: p50 and the whole spread, in ms. */
export function arrivalSpread(ops: readonly LoggedOperation[]): { p50Ms: number; spreadMs: number } {
  const at = ops.flatMap((o) => (o.at === undefined ? [] : [o.at]));
  if (at.length === 0) return { p50Ms: 0, spreadMs: 0 };
  const first = Math.min(...at);
  const rel = at.map((a) => a - first);
  return { p50Ms: percentile(rel, 50), spreadMs: Math.max(...rel) };
}
