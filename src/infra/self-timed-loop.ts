// A background task that says itself when it runs next: each run resolves with the wait before the
// following one (the census leader renews faster than its followers read). Never two runs at
// once; stop() waits for the run under way. The timer does not keep the process alive. A run must
// not throw: it reports its own failures (the loops here log them once).

export class SelfTimedLoop {
  readonly #run: () => Promise<number>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
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

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#run().then((next) => this.#schedule(next));
    }, ms);
    this.#timer.unref();
  }
}
