// Test support: a cluster throttle signal whose pace and holds a test sets, on the test's clock,
// and which records what the budget told it. The real one is the throttle Lease
// (src/pods/lease/ec2-throttle-lease.ts), tested against the emulator's Kubernetes API.
import type { FleetThrottleSignal } from '../ec2-budget.ts';

export class FixedFleetSignal implements FleetThrottleSignal {
  readonly #now: () => number;
  readonly paceMs = new Map<string, number>();
  /** Per action: the clock's time at which its hold ends. */
  readonly heldUntil = new Map<string, number>();
  clusterThrottled = false;
  /** Each throttle told: the action, and `paced` when the call was one the fleet paces. */
  readonly told: string[] = [];

  constructor(now: () => number) {
    this.#now = now;
  }

  intervalMs(action: string): number {
    return this.paceMs.get(action) ?? 0;
  }

  heldForMs(action: string): number {
    return Math.max(0, (this.heldUntil.get(action) ?? 0) - this.#now());
  }

  throttled(action: string, paced: boolean): void {
    this.told.push(paced ? `${action} paced` : action);
  }

  throttledWithin(): boolean {
    return this.clusterThrottled;
  }

  /** Whether the budget last said its agent is starting. */
  startingNow = false;

  starting(yes: boolean): void {
    this.startingNow = yes;
  }
}
