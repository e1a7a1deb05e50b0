// Virtual time for tests of loops and deadlines (node:test's mocked timers): no test sleeps and
// hopes; each states the exact virtual instants at which things happen.
import { mock } from 'node:test';

/**
 * Loops and deadlines on mocked timers: enable before start(), then
 * advance virtual time with `advance` or `until`. At every virtual instant, timers that are due run,
 * then the work they set off (the fakes do no I/O, so one macrotask, setImmediate, which is not
 * mocked, lets it finish), again and again while that work schedules more timers: a 0 ms follow-up
 * runs at the same instant, as it would on real timers.
 */
export const virtualTime = {
  /** Mocks setTimeout and Date (from 0), so a test can also read virtual time with Date.now(). */
  enable(): void {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    const mocked = globalThis.setTimeout;
    // Counts what gets scheduled; mock.timers.reset() puts the real setTimeout back.
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      scheduled++;
      return mocked(...args);
    }) as typeof setTimeout;
  },
  reset(): void {
    mock.timers.reset();
  },
  /** Advances `ms` virtual milliseconds, 1 ms at a time. */
  async advance(ms: number): Promise<void> {
    await runDueTimers();
    for (let i = 0; i < ms; i++) {
      mock.timers.tick(1);
      await runDueTimers();
    }
  },
  /** Advances until `cond` holds; returns the virtual ms it took; fails after `limitMs`. */
  async until(what: string, cond: () => boolean, limitMs = 10_000): Promise<number> {
    await runDueTimers();
    let elapsed = 0;
    while (!cond()) {
      if (elapsed >= limitMs) throw new Error(`not reached within ${limitMs} virtual ms: ${what}`);
      mock.timers.tick(1);
      elapsed++;
      await runDueTimers();
    }
    return elapsed;
  },
};

let scheduled = 0;

async function runDueTimers(): Promise<void> {
  for (let round = 0; round < 1000; round++) {
    const before = scheduled;
    mock.timers.tick(0);
    await new Promise((resolve) => setImmediate(resolve));
    if (scheduled === before) return;
  }
  throw new Error('timers keep rescheduling themselves at one virtual instant');
}
