// One agent's part in the cluster's pace of EC2 calls (the throttle Lease's FleetThrottleSignal,
// docs/design.md "The cluster slows down together"): the calls no pod waits for wait while the
// cluster holds their action, and are spaced by the fleet's interval per action; releases begin
// only at the agent's turns. Calls of class `demand` are neither held nor paced.
import { type Ec2CallClass, isFollowUpAction } from './ec2-call-class.ts';

/**
 * The cluster-wide throttle signal (the throttle Lease, src/pods/lease/ec2-throttle-lease.ts);
 * optional. It paces and holds the calls no pod waits for (every class but `demand`).
 */
export interface FleetThrottleSignal {
  /** The least interval between this agent's calls of `action` that no pod waits for, ms (0: none). */
  intervalMs(action: string): number;
  /** ms until the cluster's hold of `action` ends (0: not held): some agent was just throttled. */
  heldForMs(action: string): number;
  /**
   * This agent's lane for `action` was cut by EC2's RequestLimitExceeded; `paced`: the call was one
   * the fleet paces (so the pace was too fast), not one a pod or the agent's start waited for.
   */
  throttled(action: string, paced: boolean): void;
  /** Whether some agent of the cluster was throttled within the last `withinMs`. */
  throttledWithin(withinMs: number): boolean;
  /**
   * The agent starts (true) or has started (false). Its start's calls are not paced, so a hundred
   * nodes replaced together learn of a hold only by reading it: while starting, read it often.
   */
  starting?(yes: boolean): void;
}

/** A starting agent's first call, and its calls after a hold, are drawn within at most this long. */
const START_SPREAD_MS = 10_000;
/** How long a release turn stays open: at most this and half the interval (but see the next). */
const RELEASE_TURN_OPEN_MS = 10_000;
/**
 * The least a turn stays open (but never longer than the interval): longer than the pool's pass
 * period (5 s), so that a pass always falls into it. With few agents the interval is shorter
 * than a pass (0.4 s for one), and half of it would be missed by every other pass.
 */
const RELEASE_TURN_LEAST_OPEN_MS = 6_000;

export class FleetPace {
  readonly #fleet: FleetThrottleSignal;
  readonly #random: () => number;
  /** Per action: when the next call no pod waits for may go (the budget's clock, ms). */
  readonly #pacedAt = new Map<string, number>();
  /** Per action: the end of the hold this agent already drew its next call after. */
  readonly #spreadAfter = new Map<string, number>();
  /** Per action: a starting agent's draw after the hold it last saw, and that hold's end. */
  readonly #startAt = new Map<string, number>();
  readonly #startSpreadAfter = new Map<string, number>();
  /** When a starting agent's calls may begin (drawn at its first). */
  #startFrom: number | undefined;
  /** This agent's phase in the release turns, drawn once; and when it last began a release. */
  #releasePhase: number | undefined;
  #lastReleaseAt = Number.NEGATIVE_INFINITY;

  constructor(fleet: FleetThrottleSignal, random: () => number) {
    this.#fleet = fleet;
    this.#random = random;
  }

  /**
   * How long a call of `action` and class `cls` must still wait for the fleet (0 for demand):
   * while the cluster's hold of its action lasts, then until its turn in the pace. After a hold,
   * and for an agent's first paced call of an action, the turn is drawn at random within one
   * interval, so that the agents spread their calls over it instead of sending them together.
   */
  waitMs(action: string, cls: Ec2CallClass, now: number): number {
    if (cls === 'demand') return 0;
    const heldMs = this.#fleet.heldForMs(action);
    // Releases are spaced by their turns (releaseTurnInMs), which the pool asks before one.
    if (cls === 'release') return heldMs;
    let at = this.#pacedAt.get(action);
    if (at === undefined) {
      // An agent's first paced call of an action is drawn within one interval too: a rollout gives
      // every node its first pod in the same few seconds, and each would grow at once. (Its
      // start's calls went as demand.)
      at = now + this.#random() * this.#intervalMs(action);
      this.#pacedAt.set(action, at);
    }
    if (heldMs > 0) {
      const holdEnd = now + heldMs;
      // One draw per hold (its end moves a little with each read of the Lease).
      if (Math.abs((this.#spreadAfter.get(action) ?? Number.NEGATIVE_INFINITY) - holdEnd) > 1000) {
        this.#spreadAfter.set(action, holdEnd);
        at = Math.max(at ?? 0, holdEnd + this.#random() * this.#intervalMs(action));
        this.#pacedAt.set(action, at);
      }
    }
    return Math.max(heldMs, (at ?? now) - now, 0);
  }

  /**
   * How long a call of a starting agent must wait for the fleet: not paced (the node's pods wait
   * for the start), but its first call is drawn within a short spread, and while the cluster holds
   * an action it waits the hold out and then a draw within 1.5 of the action's intervals (at most
   * START_SPREAD_MS), so that nodes replaced together do not start, nor retry their start, together.
   */
  startWaitMs(action: string, now: number): number {
    // Once per start, a draw within what the cluster's describes take for a few calls of every
    // agent (at most 10 s): a hundred nodes replaced together do not describe in the same second.
    this.#startFrom ??=
      now +
      this.#random() * Math.min(START_SPREAD_MS, 1.5 * this.#fleet.intervalMs('DescribeNetworkInterfaces'));
    const heldMs = this.#fleet.heldForMs(action);
    if (heldMs > 0) {
      const holdEnd = now + heldMs;
      if (Math.abs((this.#startSpreadAfter.get(action) ?? Number.NEGATIVE_INFINITY) - holdEnd) > 1000) {
        this.#startSpreadAfter.set(action, holdEnd);
        // Within 1.5 of the action's intervals (at most 10 s): what spreads a hundred nodes would
        // only slow a lone one, whose every throttle would cost it up to 10 s more.
        const spreadMs = Math.min(START_SPREAD_MS, 1.5 * this.#fleet.intervalMs(action));
        this.#startAt.set(action, holdEnd + this.#random() * spreadMs);
      }
    }
    return Math.max(0, (this.#startAt.get(action) ?? now) - now, this.#startFrom - now);
  }

  /**
   * A call was granted its token: the next of its action waits one interval, jittered (±50%):
   * agents whose calls once fell into the same second do not stay in step, interval after interval.
   */
  granted(action: string, cls: Ec2CallClass, now: number): void {
    if (cls === 'demand' || isFollowUpAction(action)) return;
    if (cls === 'release') this.#lastReleaseAt = now;
    const paceMs = this.#intervalMs(action);
    if (paceMs > 0) this.#pacedAt.set(action, now + paceMs * (0.5 + this.#random()));
  }

  /**
   * ms until this agent's next turn to begin a release (0: now). Each agent has one turn per
   * interval, at a phase of its own drawn at random, open for a short window and used by the
   * first release begun in it: however many agents have addresses to give back at once (10,000
   * pods deleted), the cluster begins at most one release per agent and interval, spread evenly
   * over it, instead of all at once into the 5/s buckets.
   */
  releaseTurnInMs(now: number): number {
    const intervalMs = this.#fleet.intervalMs('UnassignPrivateIpAddresses');
    if (!(intervalMs > 0)) return 0;
    this.#releasePhase ??= this.#random();
    const turn = (Math.floor(now / intervalMs - this.#releasePhase) + this.#releasePhase) * intervalMs;
    const openMs = Math.min(
      intervalMs,
      Math.max(RELEASE_TURN_LEAST_OPEN_MS, Math.min(intervalMs / 2, RELEASE_TURN_OPEN_MS)),
    );
    if (now - turn < openMs && this.#lastReleaseAt < turn) return 0;
    return turn + intervalMs - now;
  }

  /** What finishes an earlier call (ec2-call-class.ts) is not paced: no ENI waits half made. */
  #intervalMs(action: string): number {
    return isFollowUpAction(action) ? 0 : this.#fleet.intervalMs(action);
  }
}
