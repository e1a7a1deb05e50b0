// Where the journal's fdatasync runs: on the event loop's own thread while the disk answers quickly,
// on libuv's thread pool while it does not.
//
// Why: in a burst of ADDs on a busy node, a sync handed to the pool waits for a pool thread to be
// scheduled and then for the event loop to take its completion, two waits behind the burst's other
// work that cost several times the fdatasync itself, and every ADD's answer waits for its final
// record's sync (docs/design.md, The ledger). Commits still group: while a sync blocks the loop, later requests queue and share the next one.
//
// The price is that a sync on the loop stops everything else the agent does until the disk
// answers. So a sync that took longer than `loopMaxMs` sends the following ones to the pool for a
// while (`poolForMs`, doubled after each slow try up to `poolForMaxMs`, back to the start after a
// quick one); then one sync tries the loop again. A slow or stalled disk (image pulls on the same
// volume, a degraded network disk) thus blocks the loop at most once per period.
import { performance } from 'node:perf_hooks';

export interface SyncThreadOptions {
  /** A sync on the loop that takes longer than this sends the next ones to the pool. */
  readonly loopMaxMs: number;
  /** How long they stay there after the first slow sync on the loop. */
  readonly poolForMs: number;
  /** The longest stay, reached by doubling while each try on the loop is slow again. */
  readonly poolForMaxMs: number;
}

export const DEFAULT_SYNC_THREAD: SyncThreadOptions = {
  loopMaxMs: 2,
  poolForMs: 1000,
  poolForMaxMs: 60_000,
};

export type SyncPlace = 'loop' | 'pool';

/** What the agent reports of the choice: each sync's place (a metric), and each slow one (a log line). */
export interface SyncThreadEvents {
  synced?(place: SyncPlace): void;
  /** A sync on the loop took `ms`; the next ones go to the pool for `poolForMs`. */
  slow?(ms: number, poolForMs: number): void;
}

export class SyncThread {
  readonly #now: () => number;
  readonly #options: SyncThreadOptions;
  readonly #events: SyncThreadEvents;
  /** Syncs go to the pool until this time (ms on `now`'s clock). */
  #poolUntil = Number.NEGATIVE_INFINITY;
  /** The stay that the next slow sync on the loop starts. */
  #poolFor: number;

  constructor(
    now: () => number = () => performance.now(),
    options = DEFAULT_SYNC_THREAD,
    events: SyncThreadEvents = {},
  ) {
    this.#now = now;
    this.#options = options;
    this.#events = events;
    this.#poolFor = options.poolForMs;
  }

  /** Where the next sync runs. */
  get next(): SyncPlace {
    return this.#now() < this.#poolUntil ? 'pool' : 'loop';
  }

  /**
   * Runs one sync: `onLoop` (a synchronous call, on the calling thread) or `onPool` (one that
   * waits for the pool). A failure is passed on as it is; a slow failure on the loop counts as slow.
   */
  async run(onLoop: () => void, onPool: () => Promise<void>): Promise<void> {
    const place = this.next;
    this.#events.synced?.(place);
    if (place === 'pool') return onPool();
    const start = this.#now();
    try {
      onLoop();
    } finally {
      this.#took(this.#now() - start);
    }
  }

  #took(ms: number): void {
    if (ms <= this.#options.loopMaxMs) {
      this.#poolFor = this.#options.poolForMs;
      return;
    }
    this.#poolUntil = this.#now() + this.#poolFor;
    this.#events.slow?.(ms, this.#poolFor);
    this.#poolFor = Math.min(this.#poolFor * 2, this.#options.poolForMaxMs);
  }
}
