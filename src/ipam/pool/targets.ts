// Warm pool targets (upstream amazon-vpc-cni-k8s names and meanings) and the pure decision of
// what the pool manager should do next.
//
// - WARM_ENI_TARGET (default 1): keep this many ENIs' worth of available addresses; a new ENI
//   is filled completely. Used only when neither IP target below is set.
// - WARM_IP_TARGET: keep this many available addresses.
// - MINIMUM_IP_TARGET: keep at least this many addresses in total (assigned + unused).
//   As upstream, 0 means unset, and either IP target overrides WARM_ENI_TARGET.
// - MAX_ENI: never attach more than this many ENIs (the instance limit applies anyway).
// - IP_COOLDOWN_PERIOD (seconds, default 30): how long a freed address waits before reuse.

import type { InstanceTypeLimits } from '../../cloud/cloud.ts';
import type { EniStats, PoolStats } from './pool.ts';

export interface WarmPoolTargets {
  readonly warmEniTarget: number;
  readonly warmIpTarget?: number;
  readonly minimumIpTarget?: number;
  readonly maxEni?: number;
  /** IP_COOLDOWN_PERIOD: seconds a freed address waits before reuse. */
  readonly cooldownSeconds: number;
}

export type PoolDecision =
  | { readonly kind: 'assign'; readonly count: number }
  | { readonly kind: 'attachEni' }
  | { readonly kind: 'release'; readonly count: number }
  | { readonly kind: 'freeEni'; readonly eniId: string }
  /** Give back the free addresses (and idle prefixes) of a draining ENI (pool-drain.ts). */
  | { readonly kind: 'drain'; readonly eniId: string; readonly count?: number }
  | { readonly kind: 'none' };

/** Secondary addresses one ENI can hold: the ENI's own primary address takes one slot. */
export function secondaryIpsPerEni(limits: InstanceTypeLimits): number {
  return Math.max(limits.ipsPerEni - 1, 0);
}

/** The ENI ceiling: the instance type's, lowered by MAX_ENI. */
export function effectiveMaxEnis(limits: InstanceTypeLimits, targets: WarmPoolTargets): number {
  return Math.min(limits.maxEnis, targets.maxEni ?? Number.POSITIVE_INFINITY);
}

export function usesIpTargets(targets: WarmPoolTargets): boolean {
  return (targets.warmIpTarget ?? 0) > 0 || (targets.minimumIpTarget ?? 0) > 0;
}

/**
 * What to do next, given the pool (`stats`: only ENIs vpcnet manages), the instance limits and
 * the number of ENIs attached to the instance (`eniCount`, including ENIs vpcnet does not
 * manage, since they occupy device slots). Grow first: assign addresses to an ENI with room,
 * else attach an ENI if the limits allow. Shrink only in IP-target mode, never below the
 * targets, and count only available addresses: assigned and cooling ones are never released.
 * `waiting` ADDs beyond the available addresses are a shortfall too, whatever the targets say:
 * MINIMUM_IP_TARGET alone keeps nothing warm, and a pod must not wait out a cooldown or a
 * recovery's quarantine while the node has room to grow.
 */
export function decide(
  stats: PoolStats,
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets,
  eniCount: number,
  waiting = 0,
): PoolDecision {
  const perEni = secondaryIpsPerEni(limits);
  const room = Math.max(stats.enis * perEni - stats.total, 0);
  const canAttach = eniCount < effectiveMaxEnis(limits, targets) && perEni > 0;

  if (usesIpTargets(targets)) {
    const warm = targets.warmIpTarget ?? 0;
    const minimum = targets.minimumIpTarget ?? 0;
    const short = Math.max(warm - stats.available, minimum - stats.total, waiting - stats.available, 0);
    if (short > 0) return grow(short, room, canAttach);
    const over = Math.min(stats.available - warm, stats.total - minimum);
    return over > 0 ? { kind: 'release', count: over } : { kind: 'none' };
  }

  // WARM_ENI_TARGET: a whole ENI's worth per warm ENI; with a target of 0, grow only when nothing
  // is available or the waiting ADDs outnumber what is.
  const want = targets.warmEniTarget * perEni;
  const empty = stats.available === 0 || waiting > stats.available;
  const short = targets.warmEniTarget === 0 ? (empty ? 1 : 0) : Math.max(want, waiting) - stats.available;
  // Fill the ENI with room completely, as upstream fills a new ENI: fewer EC2 calls.
  return short > 0 ? grow(room, room, canAttach) : { kind: 'none' };
}

function grow(short: number, room: number, canAttach: boolean): PoolDecision {
  if (room > 0) return { kind: 'assign', count: Math.min(short, room) };
  return canAttach ? { kind: 'attachEni' } : { kind: 'none' };
}

/**
 * The idle ENI to detach and delete, if any, as the upstream's getDeletableENI chooses it: never
 * the primary ENI (device 0) nor one vpcnet did not create (`detachable` lists those it may
 * free); only one with no assigned and no cooling address (convergence: a cooling address stays
 * on the node until its cooldown ends); and only if the pool without that ENI's addresses still
 * meets the targets, so the next decide() does not grow again: WARM_IP_TARGET and
 * MINIMUM_IP_TARGET when set, else WARM_ENI_TARGET ENIs' worth of available addresses (with a
 * target of 0: at least one). The highest device number goes first, since pods fill from the
 * lowest.
 */
export function eniToFree(
  enis: readonly EniStats[],
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets,
  detachable: ReadonlySet<string>,
): string | undefined {
  const available = enis.reduce((sum, e) => sum + e.available, 0);
  const total = enis.reduce((sum, e) => sum + e.total, 0);
  const byDeviceDesc = [...enis].sort((a, b) => b.deviceNumber - a.deviceNumber);
  for (const eni of byDeviceDesc) {
    if (eni.deviceNumber === 0 || !detachable.has(eni.eniId)) continue;
    if (eni.assigned > 0 || eni.cooling > 0) continue;
    const restAvailable = available - eni.available;
    const restTotal = total - eni.total;
    if (meetsTargets(restAvailable, restTotal, limits, targets)) return eni.eniId;
  }
  return undefined;
}

function meetsTargets(
  available: number,
  total: number,
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets,
): boolean {
  if (usesIpTargets(targets)) {
    return available >= (targets.warmIpTarget ?? 0) && total >= (targets.minimumIpTarget ?? 0);
  }
  const want = targets.warmEniTarget * secondaryIpsPerEni(limits);
  return available >= Math.max(want, 1);
}

/**
 * The next step for the pool: decide() on the whole pool; when it neither grows nor is blocked
 * on growing (release or none), an idle ENI to free comes first: detaching it gives its
 * addresses back in two calls, where releasing them one ENI at a time would take more.
 */
export function nextPoolStep(
  enis: readonly EniStats[],
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets,
  eniCount: number,
  detachable: ReadonlySet<string>,
  waiting = 0,
): PoolDecision {
  const stats: PoolStats = {
    total: enis.reduce((sum, e) => sum + e.total, 0),
    assigned: enis.reduce((sum, e) => sum + e.assigned, 0),
    cooling: enis.reduce((sum, e) => sum + e.cooling, 0),
    available: enis.reduce((sum, e) => sum + e.available, 0),
    enis: enis.length,
  };
  const decision = decide(stats, limits, targets, eniCount, waiting);
  if (decision.kind !== 'release' && decision.kind !== 'none') return decision;
  const eniId = eniToFree(enis, limits, targets, detachable);
  return eniId === undefined ? decision : { kind: 'freeEni', eniId };
}
