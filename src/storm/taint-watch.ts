// Watching the node's `vpcnet.io/ip-exhausted` taint through a storm (VPCNET_NODE_READINESS=taint):
// every quarter second the node as the API server holds it and the pool as the agent's socket
// shows it (the facts readiness looks at: free addresses, whether growth is blocked, room to grow,
// a warm target's worth). A false taint is the taint held while the node can serve by the taint's
// own rule (a warm target's worth free, or a free address and a pool that can grow) for longer
// than `graceMs`: the agent takes it off within a readiness look (0.5 s) of that, so longer means
// it put it on, or kept it, when the node could serve. A storm's kills and EC2 faults are what
// could make a careless readiness taint a node that can serve.
import { getJson } from '../infra/unix-socket-json.ts';
import { unixJson } from '../lab/unix-http.ts';

export const IP_EXHAUSTED_TAINT = 'vpcnet.io/ip-exhausted';

export interface TaintFigures {
  /** Times the taint went on (seen absent, then present). */
  readonly applied: number;
  /** Episodes of the taint held while the node could serve, past the grace. */
  readonly falseTaints: number;
  /** One line per false taint: when and what the pool showed. */
  readonly details: readonly string[];
}

export interface TaintWatchTarget {
  readonly adminSocket: string;
  readonly agentSocket: string;
  readonly nodeName: string;
}

interface PoolView {
  readonly available: number;
  readonly blocked: string | null;
  readonly roomToGrow: boolean;
  readonly warmWorth: number;
}

/** What readiness last saw of the pool (the agent's state, `readiness.pool`); none while the agent is down. */
async function poolView(agentSocket: string): Promise<PoolView | undefined> {
  try {
    const { status, body } = await getJson(agentSocket, '/v1/state', 2000);
    if (status !== 200) return undefined;
    const pool = (body as { readiness?: { pool?: Record<string, unknown> } }).readiness?.pool;
    const { free, blocked, roomToGrow, warmWorth } = pool ?? {};
    if (typeof free !== 'number' || typeof warmWorth !== 'number') return undefined;
    return {
      available: free,
      blocked: typeof blocked === 'string' ? blocked : null,
      roomToGrow: roomToGrow === true,
      warmWorth,
    };
  } catch {
    return undefined; // the agent is down (a storm kill): nothing to judge
  }
}

export function watchTaint(target: TaintWatchTarget, graceMs = 3000, everyMs = 250) {
  let applied = 0;
  const details: string[] = [];
  let wasTainted = false;
  let servingSince: number | undefined;
  let counted = false;
  let stopped = false;
  const started = performance.now();
  const done = (async () => {
    while (!stopped) {
      const node = (await unixJson(target.adminSocket, 'GET', `/api/v1/nodes/${target.nodeName}`).catch(
        () => undefined,
      )) as { spec?: { taints?: { key?: string }[] } } | undefined;
      const tainted = (node?.spec?.taints ?? []).some((t) => t.key === IP_EXHAUSTED_TAINT);
      if (tainted && !wasTainted) applied++;
      wasTainted = tainted;
      const pool = tainted ? await poolView(target.agentSocket) : undefined;
      const canServe =
        pool !== undefined &&
        (pool.available >= pool.warmWorth ||
          (pool.available > 0 && pool.blocked === null && pool.roomToGrow));
      const now = performance.now();
      if (!tainted || !canServe) {
        servingSince = undefined;
        counted = false;
      } else {
        servingSince ??= now;
        if (!counted && now - servingSince > graceMs) {
          counted = true;
          details.push(
            `at ${((now - started) / 1000).toFixed(1)} s: tainted for ${((now - servingSince) / 1000).toFixed(1)} s with ${pool.available} addresses free (warm target ${pool.warmWorth}), growth ${pool.blocked ?? 'not blocked'}, room to grow ${pool.roomToGrow}`,
          );
        }
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop(): Promise<TaintFigures> {
      stopped = true;
      await done;
      return { applied, falseTaints: details.length, details };
    },
  };
}
