// The fleet run's figures, from what the scheduler recorded, what EC2 (the emulator) counted per
// second, and what EC2 and the agents hold at the end. Pure: fleet.ts gathers, this computes.
import type { SecondCounts } from '../../src/emulator/ec2/call-rates.ts';
import { CREATED_BY_TAG, INSTANCE_ID_TAG } from '../../src/ipam/enis/eni-ownership.ts';
import type { NodeReport } from './protocol.ts';

export interface PodRecord {
  readonly name: string;
  /** ms from the pod's creation (or its rescheduling) to its sandbox's successful ADD. */
  readonly startMs?: number;
  /** ADDs that failed before it started (or gave up). */
  readonly failedAttempts: number;
}

/** An ENI as EC2 holds it at the end (GET /admin/state). */
export interface EndEni {
  readonly eniId: string;
  readonly secondaryIps: readonly string[];
  readonly tags: Readonly<Record<string, string>>;
  readonly attachment: { readonly instanceId: string } | null;
}

export interface FigureInputs {
  readonly pods: readonly PodRecord[];
  /** EC2's counts per second from the rollout's start (its first second included) to the end. */
  readonly seconds: readonly SecondCounts[];
  /** The rollout's start, in the emulator's seconds. */
  readonly startSecond: number;
  readonly nodes: number;
  /** Per second: how many nodes retried an EC2 call in it. */
  readonly retryingNodes: Readonly<Record<string, number>>;
  /** The refill rates (per second) of EC2's buckets for the actions the run called. */
  readonly refillPerSecond: Readonly<Record<string, number>>;
  readonly endEnis: readonly EndEni[];
  readonly runningInstances: ReadonlySet<string>;
  readonly reports: readonly NodeReport[];
  /** When EC2's limits were halved, in the emulator's seconds, if they were. */
  readonly halvedAtSecond?: number;
}

export interface FleetFigures {
  readonly podStartMs: {
    readonly p50: number;
    readonly p95: number;
    readonly p99: number;
    readonly max: number;
  };
  readonly podStarts: number;
  readonly failedPodStarts: number;
  readonly podsNeverStarted: number;
  readonly ec2Calls: number;
  readonly ec2CallsPerPodStart: number;
  readonly throttledCalls: number;
  /** Throttled share of the calls made 10 s after the rollout's start and later. */
  readonly throttledShareAfter10s: number;
  readonly peakCallsPerSecond: number;
  /** What EC2's buckets of the actions called refill per second, together. */
  readonly bucketLimitPerSecond: number;
  /** Seconds in which more than 10% of the nodes retried an EC2 call. */
  readonly retryStormSeconds: number;
  /** Unassign, detach and delete calls EC2 answered in seconds in which it throttled. */
  readonly releaseCallsWhileThrottled: number;
  readonly leakedAddresses: number;
  readonly leakedEnis: number;
  /** What leaked, one line each (the first 20). */
  readonly leaks: readonly string[];
  readonly callsByAction: Readonly<Record<string, { readonly calls: number; readonly throttled: number }>>;
  readonly halved?: {
    /** Throttled share of the calls from the halving on. */
    readonly throttledShare: number;
    /** Seconds from the halving to the first 10 s window with at most 2% throttled. */
    readonly recoverySeconds: number | null;
    readonly releaseCallsWhileThrottled: number;
  };
}

const RELEASE_ACTIONS = new Set([
  'UnassignPrivateIpAddresses',
  'DetachNetworkInterface',
  'DeleteNetworkInterface',
]);

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? 0;
}

export function fleetFigures(i: FigureInputs): FleetFigures {
  const starts = i.pods
    .map((p) => p.startMs)
    .filter((ms): ms is number => ms !== undefined)
    .sort((a, b) => a - b);
  const calls = sum(i.seconds, (s) => s.calls);
  const throttled = sum(i.seconds, (s) => s.throttled);
  const after10 = i.seconds.filter((s) => s.second >= i.startSecond + 10);
  const byAction: Record<string, { calls: number; throttled: number }> = {};
  for (const s of i.seconds)
    for (const [a, c] of Object.entries(s.byAction)) {
      const t = byAction[a] ?? { calls: 0, throttled: 0 };
      byAction[a] = t;
      t.calls += c.calls;
      t.throttled += c.throttled;
    }
  const halved = i.halvedAtSecond === undefined ? undefined : halvingFigures(i.seconds, i.halvedAtSecond);
  return {
    podStartMs: {
      p50: round(percentile(starts, 50)),
      p95: round(percentile(starts, 95)),
      p99: round(percentile(starts, 99)),
      max: round(starts.at(-1) ?? 0),
    },
    podStarts: starts.length,
    failedPodStarts: sum(i.pods, (p) => p.failedAttempts),
    podsNeverStarted: i.pods.length - starts.length,
    ec2Calls: calls,
    ec2CallsPerPodStart: starts.length === 0 ? 0 : round(calls / starts.length, 2),
    throttledCalls: throttled,
    throttledShareAfter10s: share(
      sum(after10, (s) => s.throttled),
      sum(after10, (s) => s.calls),
    ),
    peakCallsPerSecond: Math.max(0, ...i.seconds.map((s) => s.calls)),
    bucketLimitPerSecond: round(
      Object.keys(byAction).reduce((n, a) => n + (i.refillPerSecond[a] ?? 0), 0),
      2,
    ),
    retryStormSeconds: Object.values(i.retryingNodes).filter((n) => n > 0.1 * i.nodes).length,
    releaseCallsWhileThrottled: releasesWhileThrottled(i.seconds),
    ...leaks(i),
    callsByAction: byAction,
    ...(halved === undefined ? {} : { halved }),
  };
}

function releasesWhileThrottled(seconds: readonly SecondCounts[]): number {
  let n = 0;
  for (const s of seconds) {
    if (s.throttled === 0) continue;
    for (const [a, c] of Object.entries(s.byAction)) if (RELEASE_ACTIONS.has(a)) n += c.calls;
  }
  return n;
}

function halvingFigures(seconds: readonly SecondCounts[], at: number): NonNullable<FleetFigures['halved']> {
  const after = seconds.filter((s) => s.second >= at);
  let recoverySeconds: number | null = null;
  for (let from = at; from <= (after.at(-1)?.second ?? at) - 9; from++) {
    const window = after.filter((s) => s.second >= from && s.second < from + 10);
    const c = sum(window, (s) => s.calls);
    if (c > 0 && sum(window, (s) => s.throttled) / c <= 0.02) {
      recoverySeconds = from - at;
      break;
    }
  }
  return {
    throttledShare: share(
      sum(after, (s) => s.throttled),
      sum(after, (s) => s.calls),
    ),
    recoverySeconds,
    releaseCallsWhileThrottled: releasesWhileThrottled(after),
  };
}

/**
 * What nobody accounts for at the end: ENIs vpcnet created that are attached to no running
 * instance, or attached to a node whose agent does not know them; addresses on ENIs of running
 * nodes that the node's pool does not hold, and addresses the pools still lend to pods that
 * were deleted.
 */
function leaks(i: FigureInputs): { leakedAddresses: number; leakedEnis: number; leaks: string[] } {
  const what: string[] = [];
  const known = new Map<string, Set<string>>(); // instance → ENIs its agent knows
  const pooled = new Set<string>();
  let stillAssigned = 0;
  for (const r of i.reports) {
    known.set(r.instanceId, new Set([...Object.keys(r.enis), ...r.pendingEnis]));
    for (const ips of Object.values(r.enis)) for (const ip of ips) pooled.add(ip);
    stillAssigned += r.assigned;
    if (r.assigned > 0) what.push(`node ${r.instanceId} still lends ${r.assigned} addresses to deleted pods`);
  }
  let leakedEnis = 0;
  let leakedAddresses = stillAssigned;
  for (const e of i.endEnis) {
    const owner = e.attachment?.instanceId;
    const running = owner !== undefined && i.runningInstances.has(owner);
    if (!running) {
      if (e.tags[CREATED_BY_TAG] === 'vpcnet') {
        const creator = e.tags[INSTANCE_ID_TAG] ?? 'an unknown instance';
        const gone = i.runningInstances.has(creator) ? 'running' : 'terminated';
        const where = owner === undefined ? 'detached' : `attached to terminated ${owner}`;
        what.push(`${e.eniId} (${e.secondaryIps.length} addresses) of ${creator} (${gone}) is ${where}`);
        leakedEnis++;
        leakedAddresses += e.secondaryIps.length;
      }
      continue;
    }
    if (!(known.get(owner)?.has(e.eniId) ?? false)) {
      what.push(`${e.eniId} on ${owner} is unknown to its agent`);
      leakedEnis++;
      leakedAddresses += e.secondaryIps.length;
      continue;
    }
    const unpooled = e.secondaryIps.filter((ip) => !pooled.has(ip));
    if (unpooled.length > 0)
      what.push(`${e.eniId} on ${owner}: ${unpooled.join(', ')} not in its agent's pool`);
    leakedAddresses += unpooled.length;
  }
  return { leakedAddresses, leakedEnis, leaks: what.slice(0, 20) };
}

function sum<T>(items: readonly T[], f: (t: T) => number): number {
  return items.reduce((n, t) => n + f(t), 0);
}

function share(part: number, whole: number): number {
  return whole === 0 ? 0 : round(part / whole, 4);
}

function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
