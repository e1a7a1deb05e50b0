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

import type { InstanceTypeLimits } from '../cloud/cloud.ts';
import type { PoolStats } from './pool.ts';

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
  | { readonly kind: 'none' };

function parseCount(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  min: number,
): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const text = raw.trim();
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
    const what = min > 0 ? 'a positive integer' : 'a non-negative integer';
    throw new Error(`${name} must be ${what}, got '${raw}'`);
  }
  return value;
}

/** Reads the targets from the agent's environment; throws a message naming the bad variable. */
export function parseWarmPoolTargets(env: Readonly<Record<string, string | undefined>>): WarmPoolTargets {
  const warmIpTarget = parseCount(env, 'WARM_IP_TARGET', 0);
  const minimumIpTarget = parseCount(env, 'MINIMUM_IP_TARGET', 0);
  const maxEni = parseCount(env, 'MAX_ENI', 1);
  return {
    warmEniTarget: parseCount(env, 'WARM_ENI_TARGET', 0) ?? 1,
    cooldownSeconds: parseCount(env, 'IP_COOLDOWN_PERIOD', 0) ?? 30,
    ...(warmIpTarget === undefined ? {} : { warmIpTarget }),
    ...(minimumIpTarget === undefined ? {} : { minimumIpTarget }),
    ...(maxEni === undefined ? {} : { maxEni }),
  };
}

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
 */
export function decide(
  stats: PoolStats,
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets,
  eniCount: number,
): PoolDecision {
  const perEni = secondaryIpsPerEni(limits);
  const room = Math.max(stats.enis * perEni - stats.total, 0);
  const canAttach = eniCount < effectiveMaxEnis(limits, targets) && perEni > 0;

  if (usesIpTargets(targets)) {
    const warm = targets.warmIpTarget ?? 0;
    const minimum = targets.minimumIpTarget ?? 0;
    const short = Math.max(warm - stats.available, minimum - stats.total, 0);
    if (short > 0) return grow(short, room, canAttach);
    const over = Math.min(stats.available - warm, stats.total - minimum);
    return over > 0 ? { kind: 'release', count: over } : { kind: 'none' };
  }

  // WARM_ENI_TARGET: a whole ENI's worth per warm ENI; with a target of 0, grow only when empty.
  const want = targets.warmEniTarget * perEni;
  const short = targets.warmEniTarget === 0 ? (stats.available === 0 ? 1 : 0) : want - stats.available;
  // Fill the ENI with room completely, as upstream fills a new ENI: fewer EC2 calls.
  return short > 0 ? grow(room, room, canAttach) : { kind: 'none' };
}

function grow(short: number, room: number, canAttach: boolean): PoolDecision {
  if (room > 0) return { kind: 'assign', count: Math.min(short, room) };
  return canAttach ? { kind: 'attachEni' } : { kind: 'none' };
}
