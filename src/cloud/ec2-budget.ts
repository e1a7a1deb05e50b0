// The agent's EC2 budget: which call goes next and when. EC2 limits requests per account and
// region with a bucket per action, shared by every node of the cluster, so no fixed rate per
// agent suits both a small cluster (which may go at EC2's speed) and a large one (whose nodes
// must share it). The budget learns instead: a lane per action (ec2-lane.ts) halves its rate when
// EC2 throttles it and climbs back while EC2 answers; the operator's VPCNET_EC2_QPS and
// VPCNET_EC2_BURST cap every lane and the agent as a whole. Calls waiting for a token go most
// urgent first (ec2-call-class.ts): an ADD waiting for an address before warm top-ups, before
// describes, sweeps and releases. While EC2 throttles this agent (or, through the fleet signal,
// any agent of the cluster) releases are not sent at all. With the cluster's throttle Lease the
// calls no pod waits for are also held and paced for the whole cluster (ec2-fleet-pace.ts).

import { CloudError } from './cloud.ts';
import { EC2_CALL_CLASSES, type Ec2CallClass, isFollowUpAction } from './ec2-call-class.ts';
import { FleetPace, type FleetThrottleSignal } from './ec2-fleet-pace.ts';
import { DEFAULT_LANE_TUNING, Ec2Lane, type LaneState, type LaneTuning } from './ec2-lane.ts';
import type { BucketClock } from './token-bucket.ts';

export type { FleetThrottleSignal } from './ec2-fleet-pace.ts';

export interface Ec2BudgetOptions {
  /** The operator's ceilings (VPCNET_EC2_QPS, VPCNET_EC2_BURST): for each action and in all. */
  readonly ceiling: { readonly qps: number; readonly burst: number };
  readonly clock: BucketClock;
  /** Uniform in [0,1), for the jittered pauses. */
  readonly random: () => number;
  readonly tuning?: Partial<typeof DEFAULT_LANE_TUNING>;
  /** After EC2 throttled this agent, releases wait this long (ms; default a minute). */
  readonly releaseHoldMs?: number;
  readonly fleet?: FleetThrottleSignal;
}

/** A call waiting for its token, as the pool's health and an ADD's error say it. */
export interface TokenWait {
  readonly action: string;
  readonly cls: Ec2CallClass;
  readonly waitedMs: number;
  /** When its lane (and the agent's ceiling) have a token for it, ms from now, as things stand. */
  readonly readyInMs: number;
  /** The lane's calls per second now. */
  readonly rate: number;
  /**
   * Only the cluster's pace delays it: its turn, drawn within the fleet's interval, has not come,
   * while its lane and the agent's ceiling would have a token by then and the cluster holds nothing.
   */
  readonly atPacedTurn: boolean;
}

interface Waiter {
  readonly action: string;
  cls: Ec2CallClass;
  rank: number;
  readonly seq: number;
  readonly since: number;
  /** Asked while the agent starts: not paced, but it waits out the cluster's holds. */
  readonly starting: boolean;
  readonly resolve: (waitedMs: number) => void;
  readonly reject: (err: Error) => void;
}

/** Refused without being sent: a release while EC2 throttles, or a call after close(). */
export class Ec2BudgetRefusal extends CloudError {
  constructor(message: string, code: 'Ec2ReleaseHeld' | 'Ec2BudgetClosed') {
    super(message, code, false);
    this.name = 'Ec2BudgetRefusal';
  }
}

export const DEFAULT_RELEASE_HOLD_MS = 60_000;
/** After an ADD began to wait, the pool's calls go as demand this long (its pass and the next). */
const DEMAND_WINDOW_MS = 10_000;

export class Ec2Budget {
  readonly #o: Ec2BudgetOptions;
  readonly #tuning: LaneTuning;
  readonly #lanes = new Map<string, Ec2Lane>();
  /** The agent's own ceiling over all actions: a plain token bucket. */
  #tokens: number;
  #updatedAt: number;
  readonly #waiters: Waiter[] = [];
  #seq = 0;
  #wakeAt = Number.POSITIVE_INFINITY;
  #lastThrottleAt = Number.NEGATIVE_INFINITY;
  #closed: string | undefined;
  /** Until then an ADD waits for an address: the pool's calls go as demand (demandWaits). */
  #demandUntil = Number.NEGATIVE_INFINITY;
  #starting = false;
  /** Whether an ADD waits for an address now (the pool's, watchDemand). */
  #demandProbe: (() => boolean) | undefined;
  /** The cluster's pace and holds of the calls no pod waits for (absent: none). */
  readonly #pace: FleetPace | undefined;

  constructor(options: Ec2BudgetOptions) {
    const { qps, burst } = options.ceiling;
    if (!(qps > 0) || !Number.isFinite(qps))
      throw new Error(`EC2 ceiling qps must be a positive number, got ${qps}`);
    if (!Number.isInteger(burst) || burst < 1)
      throw new Error(`EC2 ceiling burst must be a positive integer, got ${burst}`);
    this.#o = options;
    this.#tuning = { ...DEFAULT_LANE_TUNING, ...options.tuning, ceiling: qps, burst };
    this.#tokens = burst;
    this.#updatedAt = options.clock.now();
    this.#pace = options.fleet && new FleetPace(options.fleet, options.random);
  }

  /**
   * Waits for a token of `action`'s lane and of the agent's ceiling, most urgent class first;
   * resolves with the ms waited. A release is refused at once while EC2 throttles.
   */
  acquire(action: string, cls: Ec2CallClass): Promise<number> {
    if (this.#closed !== undefined)
      return Promise.reject(
        new Ec2BudgetRefusal(`EC2 call ${action} not sent: ${this.#closed}`, 'Ec2BudgetClosed'),
      );
    if (cls === 'release') {
      const held = this.releasesHeld();
      if (held !== undefined)
        return Promise.reject(new Ec2BudgetRefusal(`${action} not sent: ${held}`, 'Ec2ReleaseHeld'));
    }
    return new Promise((resolve, reject) => {
      const now = this.#o.clock.now();
      const asked = this.classOf(cls);
      this.#waiters.push({
        action,
        cls: asked,
        rank: EC2_CALL_CLASSES.indexOf(asked),
        seq: this.#seq++,
        since: now,
        starting: this.#starting && cls !== 'release',
        resolve,
        reject,
      });
      this.#pump();
    });
  }

  /**
   * EC2 answered a call of `action` and class `cls` (as classOf gave it) sent at `sentAt` (the
   * budget's clock). A throttle that cuts the lane is told to the fleet, saying whether the call
   * was one the fleet paces (a herd of calls a pod or a starting agent waits for is not the
   * pace's fault: it does not slow the pace down).
   */
  answered(action: string, sentAt: number, throttled: boolean, cls: Ec2CallClass = 'grow'): void {
    const now = this.#o.clock.now();
    const lane = this.#lane(action);
    if (!throttled) {
      lane.answered(now);
      return;
    }
    this.#lastThrottleAt = now;
    if (lane.throttled(now, sentAt, this.#o.random))
      this.#o.fleet?.throttled(action, cls !== 'demand' && !isFollowUpAction(action));
  }

  /**
   * The class a call asked now as `cls` goes as: `demand` (not paced by the fleet) while the agent
   * starts (its start is what every pod of the node waits for) and while an ADD waits for an
   * address (the pool's passes run one at a time: its call is what the ADD waits behind), and a
   * describe for a while after (confirming what the ADD got); releases stay releases.
   */
  classOf(cls: Ec2CallClass): Ec2CallClass {
    if (cls === 'release') return cls;
    if (this.#starting || this.#demandProbe?.() === true) return 'demand';
    // The describes an ADD's pass asks after its growth (confirming the addresses it got); a warm
    // top-up beyond what the ADD needs stays a top-up.
    return cls === 'read' && this.#o.clock.now() < this.#demandUntil ? 'demand' : cls;
  }

  /** The pool says whether an ADD waits: while one does, the pool's calls are what it waits for. */
  watchDemand(probe: () => boolean): void {
    this.#demandProbe = probe;
  }

  /** The agent starts: its calls go as demand until started(). */
  starting(): void {
    this.#starting = true;
    this.#o.fleet?.starting?.(true);
  }

  /** The agent has started: its calls go by their own class from now on. */
  started(): void {
    this.#starting = false;
    this.#o.fleet?.starting?.(false);
  }

  /** Why releases are not sent now, or undefined when they may be. */
  releasesHeld(): string | undefined {
    const holdMs = this.#o.releaseHoldMs ?? DEFAULT_RELEASE_HOLD_MS;
    const sinceMs = this.#o.clock.now() - this.#lastThrottleAt;
    if (sinceMs < holdMs)
      return `EC2 throttled this agent ${(sinceMs / 1000).toFixed(1)} s ago (RequestLimitExceeded); releases wait until ${holdMs / 1000} s pass without throttling`;
    if (this.#o.fleet?.throttledWithin(holdMs) === true)
      return `EC2 throttled the cluster within the last ${holdMs / 1000} s (the throttle Lease); releases wait`;
    return undefined;
  }

  /** The most urgent call waiting for a token, if any. */
  waiting(): TokenWait | undefined {
    const w = this.#sorted()[0];
    if (w === undefined) return undefined;
    const now = this.#o.clock.now();
    const lane = this.#lane(w.action);
    const tokenMs = Math.max(lane.readyInMs(now), this.#ceilingReadyInMs(now));
    const fleetMs = this.#fleetWaitMs(w, now);
    const held = (this.#o.fleet?.heldForMs(w.action) ?? 0) > 0;
    return {
      action: w.action,
      cls: w.cls,
      waitedMs: Math.round(now - w.since),
      readyInMs: Math.round(Math.max(tokenMs, fleetMs)),
      rate: this.rate(w.action),
      atPacedTurn: !held && fleetMs > 0 && fleetMs >= tokenMs,
    };
  }

  /** `action`'s calls per second now: its lane's, or less under the fleet's pace. */
  rate(action: string): number {
    const own = this.#lane(action).rate(this.#o.clock.now());
    const paceMs = this.#o.fleet?.intervalMs(action) ?? 0;
    return paceMs > 0 ? Math.min(own, 1000 / paceMs) : own;
  }

  /** ms until `action`'s lane has a token (its pause after a throttle included), as things stand. */
  readyInMs(action: string): number {
    return this.#lane(action).readyInMs(this.#o.clock.now());
  }

  /**
   * An ADD waits for an address. The pool's passes run one at a time, so whatever call of the pool
   * waits for a token now (a top-up, the EC2 sync's describe, a sweep) is what the ADD waits
   * behind: each goes as demand (before the rest, past the fleet's pace and hold), and so does
   * every describe asked within DEMAND_WINDOW_MS. Releases stay.
   */
  demandWaits(): void {
    // What the pool describes while the ADD waits (confirming the addresses it got) too.
    this.#demandUntil = this.#o.clock.now() + DEMAND_WINDOW_MS;
    let promoted = false;
    for (const w of this.#waiters)
      if (w.cls !== 'demand' && w.cls !== 'release') {
        w.cls = 'demand';
        w.rank = EC2_CALL_CLASSES.indexOf('demand');
        promoted = true;
      }
    if (promoted) this.#pump();
  }

  /** ms until this agent's next turn to begin a release under the cluster's pace (0: now). */
  releaseTurnInMs(): number {
    return this.#pace?.releaseTurnInMs(this.#o.clock.now()) ?? 0;
  }

  /** Every lane used so far. */
  lanes(): Record<string, LaneState> {
    const now = this.#o.clock.now();
    return Object.fromEntries(
      [...this.#lanes].sort(([a], [b]) => a.localeCompare(b)).map(([a, l]) => [a, l.state(now)]),
    );
  }

  /** Tokens of the agent's ceiling now. */
  ceilingTokens(): number {
    this.#refillCeiling(this.#o.clock.now());
    return this.#tokens;
  }

  /** Refuses every call waiting and every later one (the agent stops). */
  close(reason: string): void {
    this.#closed = reason;
    for (const w of this.#waiters.splice(0))
      w.reject(new Ec2BudgetRefusal(`EC2 call ${w.action} not sent: ${reason}`, 'Ec2BudgetClosed'));
  }

  #lane(action: string): Ec2Lane {
    let lane = this.#lanes.get(action);
    if (lane === undefined) {
      lane = new Ec2Lane(this.#tuning, this.#o.clock.now());
      this.#lanes.set(action, lane);
    }
    return lane;
  }

  #fleetWaitMs(w: Waiter, now: number): number {
    if (this.#pace === undefined) return 0;
    return w.starting ? this.#pace.startWaitMs(w.action, now) : this.#pace.waitMs(w.action, w.cls, now);
  }

  #sorted(): Waiter[] {
    return [...this.#waiters].sort((a, b) => a.rank - b.rank || a.seq - b.seq);
  }

  /**
   * Grants every token it can, most urgent waiter first: a lane serves its waiters in order of
   * class, and the agent's ceiling serves the lanes so; then sleeps until the next may go.
   */
  #pump(): void {
    if (this.#closed !== undefined) return;
    const now = this.#o.clock.now();
    this.#refillCeiling(now);
    const blockedLanes = new Set<string>();
    let nextMs = Number.POSITIVE_INFINITY;
    const releasesHeld = this.releasesHeld();
    for (const w of this.#sorted()) {
      if (w.cls === 'release' && releasesHeld !== undefined) {
        // A release that waited for its turn while the cluster came to throttle is not sent.
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.reject(new Ec2BudgetRefusal(`${w.action} not sent: ${releasesHeld}`, 'Ec2ReleaseHeld'));
        continue;
      }
      if (blockedLanes.has(w.action)) continue;
      const lane = this.#lane(w.action);
      // Waiters are sorted most urgent first: past a waiter the fleet holds, only more of the same.
      const laneMs = Math.max(lane.readyInMs(now), this.#fleetWaitMs(w, now));
      if (laneMs > 0) {
        blockedLanes.add(w.action);
        nextMs = Math.min(nextMs, laneMs);
        continue;
      }
      if (this.#tokens < 1) {
        // The ceiling serves the most urgent first: nobody after this one goes before it.
        nextMs = Math.min(nextMs, this.#ceilingReadyInMs(now));
        break;
      }
      lane.tryTake(now);
      this.#pace?.granted(w.action, w.cls, now);
      this.#tokens -= 1;
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve(now - w.since);
    }
    if (Number.isFinite(nextMs)) this.#wakeIn(now, nextMs);
  }

  #wakeIn(now: number, ms: number): void {
    const at = now + Math.max(1, Math.ceil(ms));
    if (at >= this.#wakeAt && this.#wakeAt > now) return;
    this.#wakeAt = at;
    void this.#o.clock.sleep(at - now).then(() => {
      if (this.#wakeAt === at) this.#wakeAt = Number.POSITIVE_INFINITY;
      this.#pump();
    });
  }

  #ceilingReadyInMs(now: number): number {
    this.#refillCeiling(now);
    return this.#tokens >= 1 ? 0 : ((1 - this.#tokens) / this.#tuning.ceiling) * 1000;
  }

  #refillCeiling(now: number): void {
    const dt = Math.max(0, now - this.#updatedAt);
    this.#updatedAt = now;
    this.#tokens = Math.min(this.#tuning.burst, this.#tokens + (dt / 1000) * this.#tuning.ceiling);
  }
}
