// Test support: a clock whose time moves only when every task is waiting on it, so a test of
// rate limits and backoff runs in microseconds and sees exact times. run(work) drives it: while
// `work` is unsettled, it lets pending promise callbacks run, then jumps to the earliest sleeper.
import { setImmediate as nextTurn } from 'node:timers/promises';

interface Sleeper {
  readonly at: number;
  readonly wake: () => void;
}

export class VirtualClock {
  #now: number;
  #sleepers: Sleeper[] = [];
  /** Every sleep asked for, in ms, in the order asked. */
  readonly sleeps: number[] = [];

  constructor(startMs = 1_000_000) {
    this.#now = startMs;
  }

  now = (): number => this.#now;

  sleep = (ms: number): Promise<void> => {
    this.sleeps.push(ms);
    return new Promise((resolve) => {
      this.#sleepers.push({ at: this.#now + Math.max(0, ms), wake: resolve });
      this.#sleepers.sort((a, b) => a.at - b.at);
    });
  };

  /** Moves time forward by `ms` without waking anyone (a quiet period between calls). */
  pass(ms: number): void {
    this.#now += ms;
  }

  /** Runs `work` to its end, moving time to each next sleeper whenever nothing else can run. */
  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    done.catch(() => {});
    for (let idle = 0; !settled; ) {
      await nextTurn();
      if (settled) break;
      const next = this.#sleepers.shift();
      if (next === undefined) {
        // Nothing sleeps and work is not done: give real I/O a few turns, then call it stuck.
        if (++idle > 1000) throw new Error('virtual clock: work neither finished nor sleeps');
        continue;
      }
      idle = 0;
      this.#now = Math.max(this.#now, next.at);
      next.wake();
    }
    return done;
  }
}
