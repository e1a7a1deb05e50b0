// EC2 calls and RequestLimitExceeded answers per second of the emulator's clock, in total and per
// action, for the last hour: what a fleet run reads to say how close to EC2's limits it ran
// (peak calls per second, throttled share after a warm-up, seconds of retry storms).

export interface SecondCounts {
  /** Whole seconds of the emulator's clock (ms / 1000, floored). */
  readonly second: number;
  readonly calls: number;
  readonly throttled: number;
  readonly byAction: Readonly<Record<string, { readonly calls: number; readonly throttled: number }>>;
}

const KEPT_SECONDS = 3600;

interface Counts {
  calls: number;
  throttled: number;
  byAction: Map<string, { calls: number; throttled: number }>;
}

export class Ec2CallRates {
  readonly #now: () => number;
  readonly #seconds = new Map<number, Counts>();

  constructor(nowMs: () => number) {
    this.#now = nowMs;
  }

  record(action: string, throttled: boolean): void {
    const second = Math.floor(this.#now() / 1000);
    let c = this.#seconds.get(second);
    if (c === undefined) {
      c = { calls: 0, throttled: 0, byAction: new Map() };
      this.#seconds.set(second, c);
      // Seconds arrive in order (a Map iterates in insertion order): the first is the oldest.
      if (this.#seconds.size > KEPT_SECONDS) this.#seconds.delete(this.#seconds.keys().next().value!);
    }
    const a = c.byAction.get(action) ?? { calls: 0, throttled: 0 };
    c.byAction.set(action, a);
    c.calls++;
    a.calls++;
    if (throttled) {
      c.throttled++;
      a.throttled++;
    }
  }

  /** The seconds with calls since `sinceSecond` (inclusive), oldest first. */
  since(sinceSecond = 0): SecondCounts[] {
    return [...this.#seconds]
      .filter(([s]) => s >= sinceSecond)
      .sort(([a], [b]) => a - b)
      .map(([second, c]) => ({
        second,
        calls: c.calls,
        throttled: c.throttled,
        byAction: Object.fromEntries([...c.byAction].map(([k, v]) => [k, { ...v }])),
      }));
  }
}
