// One EC2 action's share of the agent's budget: EC2 keeps a bucket per action for the whole
// account, so the agent keeps a rate per action and learns it from EC2's answers. AIMD: the rate
// starts at the operator's ceiling; a RequestLimitExceeded halves it (once per round: calls sent
// before the cut do not cut it again) and pauses the lane for a jittered while, so agents
// throttled together do not come back together; then it climbs back by a fixed step per call EC2
// answers, and slowly by itself while EC2 stops throttling (a quiet node's next burst is not held
// to a rate learned long ago). The cluster's pace (ec2-fleet-pace.ts) is kept beside the lanes.

export interface LaneTuning {
  /** The operator's ceiling (VPCNET_EC2_QPS), calls per second. */
  readonly ceiling: number;
  /** Calls the lane may make at once after a quiet time at the ceiling (VPCNET_EC2_BURST). */
  readonly burst: number;
  /** The rate never drops below this (calls per second). */
  readonly floor: number;
  /** The climb per answered call, as a share of the rate at the last cut. */
  readonly stepShare: number;
  /** After this long without a throttle the rate also climbs with time ... */
  readonly quietMs: number;
  /** ... by this share of the rate at the last cut per second. */
  readonly quietClimbPerSecond: number;
}

export const DEFAULT_LANE_TUNING: Omit<LaneTuning, 'ceiling' | 'burst'> = {
  floor: 1 / 600,
  stepShare: 0.05,
  quietMs: 30_000,
  quietClimbPerSecond: 0.02,
};

export interface LaneState {
  /** Calls per second the lane allows now. */
  readonly rate: number;
  readonly tokens: number;
  /** ms (the budget's clock) of the last RequestLimitExceeded, if any. */
  readonly throttledAt?: number;
  readonly cuts: number;
}

export class Ec2Lane {
  readonly #t: LaneTuning;
  #rate: number;
  /** The rate at the last cut: the climb's step is a share of it, so the climb is additive. */
  #cutRate: number;
  #tokens: number;
  #updatedAt: number;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  #throttledAt: number | undefined;
  #cuts = 0;

  constructor(tuning: LaneTuning, now: number) {
    this.#t = tuning;
    this.#rate = tuning.ceiling;
    this.#cutRate = tuning.ceiling;
    this.#tokens = this.#capacity();
    this.#updatedAt = now;
  }

  /** The rate now. */
  rate(now: number): number {
    this.#refill(now);
    return this.#rate;
  }

  /** Takes a token if one is there. */
  tryTake(now: number): boolean {
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** ms until a token is there (0: now). */
  readyInMs(now: number): number {
    this.#refill(now);
    if (this.#tokens >= 1) return 0;
    return ((1 - this.#tokens) / this.#rate) * 1000;
  }

  /** EC2 answered a call without throttling it. */
  answered(now: number): void {
    this.#refill(now);
    this.#rate = Math.min(this.#t.ceiling, this.#rate + this.#cutRate * this.#t.stepShare);
  }

  /**
   * EC2 throttled a call sent at `sentAt`: the rate halves, unless a call sent after the last cut
   * was already throttled (one cut per round), and the lane pauses for 1 to 2 of its new intervals.
   * Returns whether the rate was cut.
   */
  throttled(now: number, sentAt: number, random: () => number): boolean {
    this.#refill(now);
    this.#throttledAt = now;
    if (sentAt <= this.#lastCutAt) return false;
    this.#rate = Math.max(this.#t.floor, this.#rate / 2);
    this.#cutRate = this.#rate;
    this.#lastCutAt = now;
    this.#cuts++;
    this.#tokens = Math.min(this.#tokens, 0) - random();
    return true;
  }

  state(now: number): LaneState {
    this.#refill(now);
    return {
      rate: this.#rate,
      tokens: Math.floor(this.#tokens * 100) / 100,
      cuts: this.#cuts,
      ...(this.#throttledAt === undefined ? {} : { throttledAt: this.#throttledAt }),
    };
  }

  /** The operator's burst at the ceiling, shrinking with the rate (at least 1). */
  #capacity(): number {
    return Math.max(1, (this.#t.burst * this.#rate) / this.#t.ceiling);
  }

  #refill(now: number): void {
    const dt = Math.max(0, now - this.#updatedAt);
    this.#updatedAt = now;
    const quietFor = now - Math.max(this.#lastCutAt, this.#throttledAt ?? Number.NEGATIVE_INFINITY);
    if (quietFor > this.#t.quietMs && this.#rate < this.#t.ceiling) {
      const climbed =
        this.#cutRate * this.#t.quietClimbPerSecond * (Math.min(dt, quietFor - this.#t.quietMs) / 1000);
      this.#rate = Math.min(this.#t.ceiling, this.#rate + climbed);
    }
    this.#tokens = Math.min(this.#capacity(), this.#tokens + (dt / 1000) * this.#rate);
  }
}
