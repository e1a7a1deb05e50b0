// Judging the node's `vpcnet.io/ip-exhausted` taint through a storm (VPCNET_NODE_READINESS=taint).
// When the taint was on is read from the emulator's API log, which names the taint keys a node
// holds after every write that changed them: every write counts, also an on-and-off quicker than
// any poll. What the node could serve is sampled every quarter second from the agent's state: the
// pool's free addresses and why its growth is blocked (the pool's own figures, not what readiness
// last looked at), and the room to grow and warm target's worth readiness judges by. A false taint
// is the taint held while the node can serve by the taint's own rule (canServeAgain) for longer
// than `graceMs`: the agent takes it off within a readiness look (0.5 s) of that, so longer means it
// put it on, or kept it, when the node could serve. A storm's kills and EC2 faults are what could
// make a careless readiness taint a node that can serve.
import { readFile, stat } from 'node:fs/promises';
import { canServeAgain, IP_EXHAUSTED_TAINT, type PoolReadiness } from '../agent/loops/node-readiness.ts';
import { getJson } from '../infra/unix-socket-json.ts';

export interface TaintFigures {
  /** Times the taint went on (a write that added it, in the emulator's API log). */
  readonly applied: number;
  /** Writes of the node that changed its taints, as the API log shows them. */
  readonly taintWrites: number;
  /** Episodes of the taint held while the node could serve, past the grace. */
  readonly falseTaints: number;
  /** One line per false taint: when and what the pool showed. */
  readonly details: readonly string[];
  /** One line per episode of the taint: when, how long, what the looks inside it saw. */
  readonly episodes: readonly string[];
}

/** A write of the node that changed its taints: when (ms since the epoch) and whether ours is on after it. */
export interface TaintWrite {
  readonly at: number;
  readonly tainted: boolean;
}

/** The pool at one look (ms since the epoch); none while the agent is down (a storm kill). */
export interface PoolSample {
  readonly at: number;
  readonly pool: PoolReadiness | undefined;
}

/**
 * The node's taint writes in the emulator's log text (one JSON object a line; `kube` lines of
 * successful writes to `/api/v1/nodes/NAME` that changed `spec.taints` carry `taints`).
 */
export function taintWritesOf(logText: string, nodeName: string): TaintWrite[] {
  const path = `/api/v1/nodes/${nodeName}`;
  const writes: TaintWrite[] = [];
  for (const line of logText.split('\n')) {
    if (!line.includes('"taints"')) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a line cut at the read's end
    }
    if (entry.msg !== 'kube' || entry.path !== path || !Array.isArray(entry.taints)) continue;
    if (typeof entry.status !== 'number' || entry.status >= 300 || typeof entry.time !== 'string') continue;
    writes.push({ at: Date.parse(entry.time), tainted: entry.taints.includes(IP_EXHAUSTED_TAINT.key) });
  }
  return writes;
}

/**
 * The taint's episodes (from `taintedAtStart` and the writes, up to `endAt`) judged against the
 * pool samples: an episode is false once the samples inside it show the node able to serve,
 * look after look, for longer than `graceMs`. A missing look (the agent down) breaks the run.
 */
export function judgeTaints(
  writes: readonly TaintWrite[],
  samples: readonly PoolSample[],
  o: {
    readonly taintedAtStart: boolean;
    readonly startAt: number;
    readonly endAt: number;
    readonly graceMs: number;
  },
): TaintFigures {
  const episodes: { on: number; off: number }[] = [];
  let onSince: number | undefined = o.taintedAtStart ? o.startAt : undefined;
  let applied = 0;
  for (const w of writes) {
    if (w.tainted && onSince === undefined) {
      onSince = w.at;
      applied++;
    } else if (!w.tainted && onSince !== undefined) {
      episodes.push({ on: onSince, off: w.at });
      onSince = undefined;
    }
  }
  if (onSince !== undefined) episodes.push({ on: onSince, off: o.endAt });
  const details: string[] = [];
  const told: string[] = [];
  const secs = (ms: number) => ((ms - o.startAt) / 1000).toFixed(1);
  for (const e of episodes) {
    const inside = samples.filter((s) => s.at >= e.on && s.at <= e.off);
    const serving = inside.filter((s) => s.pool !== undefined && canServeAgain(s.pool)).length;
    const down = inside.filter((s) => s.pool === undefined).length;
    told.push(
      `tainted at ${secs(e.on)} s for ${((e.off - e.on) / 1000).toFixed(1)} s: ${inside.length} looks, ${serving} could serve, ${down} with the agent down`,
    );
    let servingSince: number | undefined;
    for (const s of inside) {
      if (s.pool === undefined || !canServeAgain(s.pool)) {
        servingSince = undefined;
        continue;
      }
      servingSince ??= s.at;
      if (s.at - servingSince > o.graceMs) {
        const p = s.pool;
        details.push(
          `at ${secs(s.at)} s: tainted (since ${secs(e.on)} s) for ${((s.at - servingSince) / 1000).toFixed(1)} s while it could serve: ${p.free} addresses free (warm target ${p.warmWorth}), growth ${p.blocked ?? 'not blocked'}, room to grow ${p.roomToGrow}`,
        );
        break;
      }
    }
  }
  return { applied, taintWrites: writes.length, falseTaints: details.length, details, episodes: told };
}

export interface TaintWatchTarget {
  readonly adminSocket: string;
  readonly agentSocket: string;
  readonly nodeName: string;
  /** The emulator's log file (its API log). */
  readonly emulatorLog: string;
}

interface StateBody {
  readonly pool?: { stats?: { available?: unknown }; growth?: { blocked?: unknown } };
  readonly readiness?: { pool?: { roomToGrow?: unknown; warmWorth?: unknown } };
}

/** The pool as the agent's state shows it now; none while the agent is down or not judging readiness. */
async function poolNow(agentSocket: string): Promise<PoolReadiness | undefined> {
  try {
    const { status, body } = await getJson(agentSocket, '/v1/state', 2000);
    if (status !== 200) return undefined;
    const { pool, readiness } = body as StateBody;
    const free = pool?.stats?.available;
    const warmWorth = readiness?.pool?.warmWorth;
    if (typeof free !== 'number' || typeof warmWorth !== 'number') return undefined;
    const blocked = pool?.growth?.blocked;
    return {
      free,
      blocked: typeof blocked === 'string' ? blocked : null,
      roomToGrow: readiness?.pool?.roomToGrow === true,
      warmWorth,
    };
  } catch {
    return undefined; // the agent is down (a storm kill): nothing to judge
  }
}

async function taintedNow(t: TaintWatchTarget): Promise<boolean> {
  const { status, body } = await getJson(t.adminSocket, `/api/v1/nodes/${t.nodeName}`, 5000);
  if (status !== 200) throw new Error(`the emulator answered HTTP ${status} for node ${t.nodeName}`);
  const taints = (body as { spec?: { taints?: { key?: string }[] } }).spec?.taints ?? [];
  return taints.some((x) => x.key === IP_EXHAUSTED_TAINT.key);
}

/**
 * Starts sampling the pool. `stop` first waits, up to `settleMs`, for the node to be untainted
 * with a pool that can serve: after a storm its pods are gone and their addresses end their
 * cooldown with the agent alive, so a taint that is never taken off shows as false instead of
 * being cleared by the next kill's restart. Then it reads the API log written meanwhile and
 * judges the taint.
 */
export async function watchTaint(target: TaintWatchTarget, graceMs = 3000, everyMs = 250) {
  const logFrom = (await stat(target.emulatorLog)).size;
  const taintedAtStart = await taintedNow(target);
  const startAt = Date.now();
  const samples: PoolSample[] = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const pool = await poolNow(target.agentSocket);
      samples.push({ at: Date.now(), pool });
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop(settleMs = 0): Promise<TaintFigures> {
      const until = Date.now() + settleMs;
      while (Date.now() < until) {
        const last = samples.at(-1)?.pool;
        if (last !== undefined && canServeAgain(last) && !(await taintedNow(target))) break;
        await new Promise((r) => setTimeout(r, everyMs));
      }
      stopped = true;
      await done;
      const endAt = Date.now();
      const log = (await readFile(target.emulatorLog)).subarray(logFrom).toString('utf8');
      return judgeTaints(taintWritesOf(log, target.nodeName), samples, {
        taintedAtStart,
        startAt,
        endAt,
        graceMs,
      });
    },
  };
}
