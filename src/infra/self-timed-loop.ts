// A background task that says itself when it runs next: each run resolves with the wait before the
// following one (the census leader renews faster than its followers read). Never two runs at
// once; stop() waits for the run under way. The timer does not keep the process alive. A run must
// not throw: it reports its own failures (the loops here log them once).

export class SelfTimedLoop {
  readonly #run: () => Promise<number>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  /** Whether a run is under way (a nudge then asks for another right after it). */
  #busy = false;
  #again = false;
  #stopped = false;

  constructor(run: () => Promise<number>) {
    this.#run = run;
  }

  start(firstAfterMs = 0): void {
    this.#schedule(firstAfterMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** A run now (after the one under way, if any) instead of at the time the last run set. */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#busy) this.#again = true;
    else this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#busy = true;
      this.#running = this.#run().then((next) => {
        this.#busy = false;
        const again = this.#again;
        this.#again = false;
        this.#schedule(again ? 0 : next);
      });
    }, ms);
    this.#timer.unref();
  }
}
