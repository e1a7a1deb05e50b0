// A background loop of passes: every intervalMs, at once again after a pass that changed
// something (up to a bound), sooner when nudged, and with exponential backoff after a failure.
// A pass that throws is reported and retried; the loop itself never throws.

export interface PassLoopOptions {
  /** One pass; resolves true if it changed something, so that another pass should follow at once. */
  readonly run: () => Promise<boolean>;
  readonly intervalMs: number;
  /** First retry delay after a failure; doubled per consecutive failure up to maxBackoffMs. */
  readonly retryBaseMs: number;
  readonly maxBackoffMs: number;
  readonly onFailure: (err: unknown, failures: number, retryInMs: number) => void;
  /** Called after every pass; may return an earlier wake-up (ms) than the loop would pick. */
  readonly afterPass?: () => number | undefined;
}

/** Immediate follow-up passes allowed before the loop waits for its interval again. */
const MAX_IMMEDIATE_PASSES = 20;

export class PassLoop {
  readonly #o: PassLoopOptions;
  #started = false;
  #stopped = false;
  #running = false;
  #nudged = false;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  #immediatePasses = 0;

  constructor(options: PassLoopOptions) {
    this.#o = options;
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
    this.#schedule(0);
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

  /** No pass starts after this; one already running finishes (the caller may await it). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#tick(), delayMs);
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    this.#running = true;
    this.#nudged = false;
    let next = this.#o.intervalMs;
    try {
      const changed = await this.#o.run();
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
      next = Math.min(this.#o.retryBaseMs * 2 ** (this.#failures - 1), this.#o.maxBackoffMs);
      try {
        this.#o.onFailure(err, this.#failures, next);
      } catch {
        // Reporting must not stop the loop.
      }
    }
    this.#running = false;
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
