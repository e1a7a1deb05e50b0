// What the fleet's scheduler stand-in does, decided from the seed before the run: when each pod is
// created and on which node (spread as kube-scheduler's default scoring spreads a rollout: the
// node with the fewest pods, ties broken at random), which nodes are replaced mid-run and when,
// and when each pod is deleted. Times are ms from the rollout's start.
import { type Prng, seededPrng } from '../../src/storm/prng.ts';

export interface PlanOptions {
  readonly nodes: number;
  readonly pods: number;
  readonly rolloutSeconds: number;
  /** Seconds the pods run after the rollout before they are deleted. */
  readonly holdSeconds: number;
  /** Seconds over which the pods are deleted. */
  readonly deleteSeconds: number;
  /** Share of the nodes replaced mid-hold (0.1: 10%). */
  readonly churn: number;
  readonly seed: number;
}

export interface PlannedPod {
  readonly name: string;
  readonly node: number;
  readonly createAtMs: number;
  readonly deleteAtMs: number;
}

export interface FleetPlan {
  readonly pods: readonly PlannedPod[];
  /** The nodes replaced (their pods deleted, the node stopped and terminated, a new one started). */
  readonly churnNodes: readonly number[];
  readonly churnAtMs: number;
  /** When the last pod is deleted. */
  readonly endMs: number;
}

export function planFleet(o: PlanOptions): FleetPlan {
  if (o.nodes < 1 || o.pods < 0)
    throw new Error(`a fleet needs nodes >= 1 and pods >= 0, got ${o.nodes}, ${o.pods}`);
  const rng = seededPrng(o.seed);
  const rolloutMs = o.rolloutSeconds * 1000;
  const deletesFrom = rolloutMs + o.holdSeconds * 1000;
  const createAt = Array.from({ length: o.pods }, () => rng.next() * rolloutMs).sort((a, b) => a - b);
  const load = new Array<number>(o.nodes).fill(0);
  const pods = createAt.map((at, i) => {
    const node = leastLoaded(load, rng);
    load[node] = (load[node] ?? 0) + 1;
    return {
      name: `pod-${i}`,
      node,
      createAtMs: Math.round(at),
      deleteAtMs: Math.round(deletesFrom + rng.next() * o.deleteSeconds * 1000),
    };
  });
  const churnCount = Math.round(o.nodes * o.churn);
  const churnNodes = shuffled(
    Array.from({ length: o.nodes }, (_, i) => i),
    rng,
  )
    .slice(0, churnCount)
    .sort((a, b) => a - b);
  return {
    pods,
    churnNodes,
    churnAtMs: Math.round(rolloutMs + (o.holdSeconds * 1000) / 2),
    endMs: Math.round(deletesFrom + o.deleteSeconds * 1000),
  };
}

function leastLoaded(load: readonly number[], rng: Prng): number {
  let min = Number.POSITIVE_INFINITY;
  let ties: number[] = [];
  for (const [i, n] of load.entries()) {
    if (n < min) {
      min = n;
      ties = [i];
    } else if (n === min) ties.push(i);
  }
  return rng.pick(ties);
}

function shuffled<T>(items: T[], rng: Prng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
