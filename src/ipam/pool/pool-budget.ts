// The pool and the agent's EC2 budget (cloud/ec2-budget.ts): how much one top-up asks for, when
// the pool says it waits for EC2 tokens rather than for EC2, and when it gives nothing back.
//
// One AssignPrivateIpAddresses per pod is what starves a node when EC2's tokens are scarce: a
// top-up asks for the targets' shortfall, the ADDs waiting, and what pods took lately over the time
// the next call will take to get a token. What that adds beyond the targets is not given back while
// pods keep coming (SHRINK_QUIET_MS).

import type { Ec2BudgetView } from '../../cloud/limited-cloud.ts';
import type { GrowthState } from './pool-growth-health.ts';

/** A pool that lent an address this recently gives none back: the surplus of a batch is kept. */
export const SHRINK_QUIET_MS = 30_000;

/** Allocations are counted over this window to estimate how fast pods take addresses. */
const ALLOCATION_WINDOW_MS = 10_000;

/** The wait for the next token counted at least this, at most that (s). */
const MIN_HORIZON_S = 1;
const MAX_HORIZON_S = 60;

export interface TopUp {
  /** Addresses the targets are short of. */
  readonly short: number;
  /** ADDs waiting for an address now. */
  readonly waiting: number;
  readonly allocationsPerSecond: number;
  /** The assign lane's rate now (calls per second); undefined without a budget. */
  readonly callsPerSecond: number | undefined;
}

/** Addresses one top-up asks for (the ENI's room caps it where it is made); without a budget, the shortfall. */
export function topUpCount(t: TopUp): number {
  if (t.callsPerSecond === undefined) return Math.max(1, t.short + t.waiting);
  const horizon = Math.min(MAX_HORIZON_S, Math.max(MIN_HORIZON_S, 1 / t.callsPerSecond));
  const expected = Math.ceil(t.allocationsPerSecond * horizon);
  return Math.max(1, t.short + t.waiting, expected);
}

/** When the pool lent addresses lately: how fast, and whether it may give any back. */
export class AllocationRate {
  readonly #now: () => number;
  #times: number[] = [];

  constructor(now: () => number) {
    this.#now = now;
  }

  lent(): void {
    const now = this.#now();
    this.#times.push(now);
    if (this.#times.length > 256) this.#times = this.#times.filter((t) => now - t < ALLOCATION_WINDOW_MS);
  }

  /** Addresses lent per second lately: over the last 10 s, or since the first of them (1 s at least). */
  perSecond(): number {
    const now = this.#now();
    const recent = this.#times.filter((t) => now - t < ALLOCATION_WINDOW_MS);
    const first = recent[0];
    if (first === undefined) return 0;
    return recent.length / (Math.max(1000, now - first) / 1000);
  }

  /** Whether nothing was lent for SHRINK_QUIET_MS. */
  quiet(): boolean {
    const last = this.#times.at(-1);
    return last === undefined || this.#now() - last >= SHRINK_QUIET_MS;
  }
}

/**
 * The growth state while a growth step waits for an EC2 token: `ec2Budget`, with what waits and
 * for how long. Undefined when no growth call waits, or only a warm top-up waiting for its turn in
 * the cluster's pace (drawn within the fleet's interval: no pod waits for it, and an ADD that comes
 * sends it at once as demand).
 */
export function budgetBlocked(
  budget: Ec2BudgetView | undefined,
  growingSince: number | undefined,
): GrowthState | undefined {
  if (budget === undefined || growingSince === undefined) return undefined;
  const w = budget.waiting();
  if (w === undefined || (w.cls !== 'demand' && w.cls !== 'grow')) return undefined;
  if (w.cls === 'grow' && w.atPacedTurn) return undefined;
  return {
    blocked: 'ec2Budget',
    since: growingSince,
    failures: 0,
    wait: { action: w.action, waitedMs: w.waitedMs, readyInMs: w.readyInMs, ratePerSecond: round(w.rate) },
  };
}

/** What an ADD's code 11 says when the pool's growth waits for an EC2 token; undefined otherwise. */
export function budgetWaitText(state: GrowthState | undefined): string | undefined {
  if (state?.blocked !== 'ec2Budget' || state.wait === undefined) return undefined;
  const { action, waitedMs, readyInMs, ratePerSecond } = state.wait;
  return (
    `the pool waits for the EC2 API budget: ${action} has waited ${(waitedMs / 1000).toFixed(1)} s for a token, ` +
    `next in about ${(readyInMs / 1000).toFixed(1)} s (this node's rate for it is ${ratePerSecond}/s, ` +
    "learnt from EC2's throttling of the account; the agent's state shows ec2.lanes)"
  );
}

function round(n: number): number {
  return n >= 1 ? Math.round(n * 100) / 100 : Number(n.toPrecision(2));
}
