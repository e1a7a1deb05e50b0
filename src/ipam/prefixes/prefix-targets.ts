// What the pool should do next in prefix mode (ENABLE_PREFIX_DELEGATION), with upstream's names and
// meanings: WARM_PREFIX_TARGET keeps that many whole free /28 prefixes; WARM_IP_TARGET and
// MINIMUM_IP_TARGET, when either is set, override it and are met in whole prefixes (a shortfall of
// n addresses asks for ceil(n / 16) prefixes). Each prefix or secondary IP takes one of an ENI's
// address slots (addresses per ENI − 1). A prefix is given back only when none of its addresses is
// assigned or cooling. Pure: prefix-pool.ts builds the view and carries the decision out.
//
// Going beyond upstream: while the subnet has no free /28 (InsufficientCidrBlocks), the pool falls
// back to secondary IPs sized in addresses (WARM_PREFIX_TARGET × 16 available, or the IP targets),
// and retries a prefix when `probeDue`. Out of fallback, secondary IPs that are free go back.

import type { InstanceTypeLimits } from '../../cloud/cloud.ts';
import { effectiveMaxEnis, type PoolDecision, usesIpTargets, type WarmPoolTargets } from '../pool/targets.ts';
import { PREFIX_SIZE } from './prefixes.ts';

/** One ENI of the pool, by slot: its prefixes and its secondary IPs ("singles"). */
export interface EniSlots {
  readonly eniId: string;
  readonly deviceNumber: number;
  /** Addresses assigned or cooling, per prefix. */
  readonly prefixes: readonly { readonly prefix: string; readonly inUse: number }[];
  readonly singles: number;
  readonly singlesAvailable: number;
  /** Over all the ENI's addresses. */
  readonly assigned: number;
  readonly cooling: number;
  readonly available: number;
  readonly total: number;
}

export interface FallbackView {
  readonly active: boolean;
  /** In fallback: the next try for a prefix is due. */
  readonly probeDue: boolean;
}

/**
 * `unit` says what `count` counts for assign and release: prefixes or secondary IPs. `modeCleanUp`:
 * a release of the other mode's addresses, which the pool's own mode needs gone (free secondary IPs
 * in prefix mode, a slot for a prefix's retry, an unused prefix with delegation off), as opposed
 * to a surplus of the mode's own.
 */
export type UnitDecision =
  | (PoolDecision & {
      readonly kind: 'assign' | 'release';
      readonly unit: 'prefixes' | 'ips';
      readonly modeCleanUp?: true;
    })
  | Exclude<PoolDecision, { readonly kind: 'assign' | 'release' }>;

export function slotsUsed(eni: EniSlots): number {
  return eni.prefixes.length + eni.singles;
}

export function prefixStep(
  enis: readonly EniSlots[],
  limits: InstanceTypeLimits,
  targets: WarmPoolTargets & { readonly warmPrefixTarget: number },
  eniCount: number,
  detachable: ReadonlySet<string>,
  fallback: FallbackView,
): UnitDecision {
  const perEni = Math.max(limits.ipsPerEni - 1, 0);
  const hasRoom = enis.some((e) => slotsUsed(e) < perEni);
  const canAttach = eniCount < effectiveMaxEnis(limits, targets) && perEni > 0;
  const sum = (f: (e: EniSlots) => number) => enis.reduce((n, e) => n + f(e), 0);
  const available = sum((e) => e.available);
  const total = sum((e) => e.total);
  const freePrefixes = sum((e) => e.prefixes.filter((p) => p.inUse === 0).length);
  const grow = (count: number, unit: 'prefixes' | 'ips'): UnitDecision => {
    if (hasRoom) return { kind: 'assign', count, unit };
    return canAttach ? { kind: 'attachEni' } : { kind: 'none' };
  };

  const freeSingles = sum((e) => e.singlesAvailable);
  if (!fallback.active && freeSingles > 0)
    return { kind: 'release', count: freeSingles, unit: 'ips', modeCleanUp: true };
  // A prefix is due to be tried again but every slot is taken: a free secondary IP makes room.
  if (fallback.active && fallback.probeDue && !hasRoom && freeSingles > 0) {
    return { kind: 'release', count: 1, unit: 'ips', modeCleanUp: true };
  }

  const ipTargets = usesIpTargets(targets);
  const warmIps = ipTargets
    ? (targets.warmIpTarget ?? 0)
    : Math.max(targets.warmPrefixTarget * PREFIX_SIZE, 1);
  const minimum = ipTargets ? (targets.minimumIpTarget ?? 0) : 0;
  const shortIps = Math.max(warmIps - available, minimum - total, 0);
  if (fallback.active && shortIps > 0) {
    return fallback.probeDue ? grow(Math.ceil(shortIps / PREFIX_SIZE), 'prefixes') : grow(shortIps, 'ips');
  }
  if (!fallback.active) {
    const shortPrefixes = ipTargets
      ? Math.ceil(shortIps / PREFIX_SIZE)
      : Math.max(targets.warmPrefixTarget - freePrefixes, 0);
    if (shortPrefixes > 0) return grow(shortPrefixes, 'prefixes');
  }

  const keep = (restAvailable: number, restTotal: number, restFree: number) =>
    ipTargets || fallback.active
      ? restAvailable >= warmIps && restTotal >= minimum
      : restFree >= targets.warmPrefixTarget;
  const idle = [...enis]
    .sort((a, b) => b.deviceNumber - a.deviceNumber)
    .find(
      (e) =>
        e.deviceNumber !== 0 &&
        detachable.has(e.eniId) &&
        e.assigned === 0 &&
        e.cooling === 0 &&
        keep(available - e.available, total - e.total, freePrefixes - e.prefixes.length),
    );
  if (idle !== undefined) return { kind: 'freeEni', eniId: idle.eniId };

  let release = 0;
  while (
    release < freePrefixes &&
    keep(
      available - (release + 1) * PREFIX_SIZE,
      total - (release + 1) * PREFIX_SIZE,
      freePrefixes - release - 1,
    )
  ) {
    release++;
  }
  if (release > 0) return { kind: 'release', count: release, unit: 'prefixes' };
  if (fallback.active && fallback.probeDue && hasRoom) return { kind: 'assign', count: 1, unit: 'prefixes' };
  return { kind: 'none' };
}
