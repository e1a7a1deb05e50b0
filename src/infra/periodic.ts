// One periodic loop for every background job of the agent (the pool passes, the reconcile loop,
// the DEL spool drain): a pass every intervalMs, never two at once, at once again after a pass
// that changed something (up to a bound), sooner when nudged, with exponential backoff after a
// failure. A pass that throws is reported and retried; the loop itself never throws.

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface PeriodicLoopOptions {
  /** One pass; resolving true means it changed something and another pass should follow at once. */
  readonly run: () => Promise<unknown>;
  readonly intervalMs: number;
  /** Delay of the first pass after start() (default 0: at once). */
  readonly firstAfterMs?: number;
  /** First retry delay after a failure; doubled per consecutive failure up to maxBackoffMs. */
  readonly retryBaseMs?: number;
  readonly maxBackoffMs?: number;
  readonly onFailure?: (err: unknown, failures: number, retryInMs: number) => void;
  /** Called after every pass; may return an earlier wake-up (ms) than the loop would pick. */
  readonly afterPass?: () => number | undefined;
  /** The loop alone does not keep the process alive (for housekeeping loops). */
  readonly unref?: boolean;
  /** For tests: a fake clock's timers. */
  readonly timers?: Timers;
}

/** Immediate follow-up passes allowed before the loop waits for its interval again. */
const MAX_IMMEDIATE_PASSES = 20;

export class PeriodicLoop {
  readonly #o: PeriodicLoopOptions;
  readonly #timers: Timers;
  #started = false;
  #stopped = false;
  #running: Promise<void> | undefined;
  #nudged = false;
  #timer: unknown;
  #failures = 0;
  #immediatePasses = 0;

  constructor(options: PeriodicLoopOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
  }

  /** Consecutive failed passes (0 after a success). */
  get failures(): number {
    return this.#failures;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#schedule(this.#o.firstAfterMs ?? 0);
  }

  /** Runs a pass soon. Does not cut a backoff short: a throttled API needs the pause. */
  nudge(): void {
    if (!this.#started || this.#stopped) return;
    if (this.#running) {
      this.#nudged = true;
      return;
    }
    if (this.#failures === 0) this.#schedule(0);
  }

  /** No pass starts after this; resolves once a pass already running has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    const handle = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#tick().finally(() => {
        this.#running = undefined;
      });
    }, delayMs);
    if (this.#o.unref === true) (handle as { unref?: () => void }).unref?.();
    this.#timer = handle;
  }

  async #tick(): Promise<void> {
    this.#nudged = false;
    let next = this.#o.intervalMs;
    try {
      const changed = (await this.#o.run()) === true;
      this.#failures = 0;
      if (changed && this.#immediatePasses < MAX_IMMEDIATE_PASSES) {
        this.#immediatePasses++;
        next = 0;
      } else {
        this.#immediatePasses = 0;
      }
    } catch (err) {
      this.#failures++;
      this.#immediatePasses = 0;
      const base = this.#o.retryBaseMs ?? this.#o.intervalMs;
      next = Math.min(base * 2 ** (this.#failures - 1), this.#o.maxBackoffMs ?? this.#o.intervalMs);
      try {
        this.#o.onFailure?.(err, this.#failures, next);
      } catch {
        // Reporting must not stop the loop.
      }
    }
    if (this.#nudged && this.#failures === 0) next = 0;
    try {
      const earlier = this.#o.afterPass?.();
      if (earlier !== undefined) next = Math.min(next, earlier);
    } catch {
      // As above: the loop outlives its observers.
    }
    this.#schedule(next);
  }
}
