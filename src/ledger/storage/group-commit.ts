// Group commit: while one write is in flight, later commits wait for the next write, so a burst of
// N pod operations costs about two writes instead of N. Durable before success: a durable commit
// resolves only once its changes were written and then synced.
//
// Two levels. `durable`: on the disk (fdatasync), what an answer to the runtime waits for.
// `written`: handed to the kernel (in the page cache, not yet synced): it outlives the agent's
// process, not a power cut. An ADD's record of intent needs no more: it guards against the agent
// dying between kernel steps, and the kernel state it describes does not outlive a power cut
// either.
//
// Writes (appends, quick) and syncs (fdatasync, a wait for the disk) are two lines of work. Writes
// run one at a time, and so do syncs; a sync starts only between writes and covers every write
// before it; a write may run while a sync does, so a written commit never waits for the disk (a
// sync on the event loop's own thread, sync-thread.ts, simply finishes before the next write).
//
// Work that may wait (a compaction the store put off during a burst) runs once the line has been
// quiet for a while: no commit waiting, none arrived. It takes the write line; a commit that comes
// meanwhile waits for it as for any write.

/** How far a commit must get before it resolves. */
export type CommitLevel = 'durable' | 'written';

interface Waiter {
  /** The change sequence number this commit must see written (or on disk). */
  readonly seq: number;
  readonly durable: boolean;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export interface GroupStore {
  /** Writes every change not yet written; says whether that write was also synced (a compaction). */
  write(): Promise<{ readonly synced: boolean }>;
  /** Syncs everything written so far. */
  sync(): Promise<void>;
  /** Whether the store has work put off until the line is quiet. */
  quietWorkDue?(): boolean;
  /** Does that work; true when it also wrote and synced every change so far (a compaction). */
  quietWork?(): Promise<boolean>;
}

/** How long the line must be quiet before put-off work starts: a burst's commits come far closer. */
export const DEFAULT_QUIET_MS = 100;

export class GroupCommit {
  /** The sequence number of the latest change (the owner increments it per mutation). */
  readonly #latest: () => number;
  readonly #store: GroupStore;
  /** The highest sequence number known to be written, and known to be on disk. */
  #writtenSeq = 0;
  #durableSeq = 0;
  #writing = false;
  #syncing = false;
  #pumpScheduled = false;
  #waiters: Waiter[] = [];
  readonly #quietMs: number;
  #quietTimer: ReturnType<typeof setTimeout> | undefined;
  /** The put-off work in flight, if any. */
  #quietRun: Promise<void> | undefined;
  /** No put-off work until the next commit (stopQuietWork, or the last attempt failed). */
  #stopped = false;

  constructor(latest: () => number, store: GroupStore, quietMs = DEFAULT_QUIET_MS) {
    this.#latest = latest;
    this.#store = store;
    this.#quietMs = quietMs;
  }

  /**
   * Resolves once every change made before this call has reached `level`; rejects if the write
   * (or sync) that carried them failed (the changes stay in memory and ride on the next write).
   */
  commit(level: CommitLevel = 'durable'): Promise<void> {
    const seq = this.#latest();
    const durable = level === 'durable';
    if (seq <= (durable ? this.#durableSeq : this.#writtenSeq)) return Promise.resolve();
    // Not quiet: put-off work waits for the next quiet spell (also after stopQuietWork: the
    // ledger's owner commits again after closing it).
    clearTimeout(this.#quietTimer);
    this.#quietTimer = undefined;
    this.#stopped = false;
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, durable, resolve, reject });
      this.#schedulePump();
    });
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    // Defer to a microtask so that commits issued in the same tick share one write.
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  /** Starts whichever of the two lines has work and is free. */
  #pump(): void {
    // A sync first: it starts only between writes and covers all of them, and a write may then
    // run beside it (were writes first, a burst of them would keep every durable commit waiting).
    if (
      !this.#writing &&
      !this.#syncing &&
      this.#waiters.some((w) => w.durable && w.seq <= this.#writtenSeq && w.seq > this.#durableSeq)
    )
      void this.#sync();
    if (!this.#writing && this.#waiters.some((w) => w.seq > this.#writtenSeq)) void this.#write();
    if (!this.#writing && !this.#syncing && this.#waiters.length === 0) this.#awaitQuiet();
  }

  /** Starts the put-off work once nothing has been committed for the quiet delay. */
  #awaitQuiet(): void {
    if (this.#stopped || this.#quietTimer !== undefined || this.#store.quietWorkDue?.() !== true) return;
    this.#quietTimer = setTimeout(() => {
      this.#quietTimer = undefined;
      if (!this.#writing && !this.#syncing && this.#waiters.length === 0 && !this.#stopped)
        void this.#startQuietWork();
    }, this.#quietMs);
    // A process with nothing else to do may exit: the work stays due, for the next write.
    this.#quietTimer.unref?.();
  }

  /** Starts the put-off work (stopQuietWork waits for it); resolves with its failure, if any. */
  #startQuietWork(): Promise<unknown> {
    const run = this.#doQuietWork();
    this.#quietRun = run.then(() => undefined);
    return run;
  }

  async #doQuietWork(): Promise<unknown> {
    this.#writing = true;
    const seq = this.#latest();
    try {
      if (await this.#store.quietWork?.()) {
        this.#writtenSeq = Math.max(this.#writtenSeq, seq);
        this.#durableSeq = Math.max(this.#durableSeq, seq);
        this.#settle();
      }
      return undefined;
    } catch (err) {
      // Only what is on disk still counts as written, and the store's next write (a compaction)
      // reports a failure to the commits that wait for it. Not tried again before a commit comes.
      this.#writtenSeq = this.#durableSeq;
      this.#stopped = true;
      return err;
    } finally {
      this.#writing = false;
      this.#quietRun = undefined;
      this.#schedulePump();
    }
  }

  /** Runs the put-off work at once, if there is some and the line is free; rejects if it fails. */
  async quietWorkNow(): Promise<void> {
    clearTimeout(this.#quietTimer);
    this.#quietTimer = undefined;
    if (this.#writing || this.#syncing || this.#store.quietWorkDue?.() !== true) return;
    const err = await this.#startQuietWork();
    if (err !== undefined) throw err;
  }

  /** No put-off work until the next commit: cancels what is scheduled, waits for what runs. */
  async stopQuietWork(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#quietTimer);
    this.#quietTimer = undefined;
    await this.#quietRun;
  }

  async #write(): Promise<void> {
    this.#writing = true;
    const seq = this.#latest();
    try {
      const { synced } = await this.#store.write();
      this.#writtenSeq = Math.max(this.#writtenSeq, seq);
      if (synced) this.#durableSeq = Math.max(this.#durableSeq, seq);
      this.#settle();
    } catch (err) {
      this.#fail(seq, err);
    } finally {
      this.#writing = false;
      this.#schedulePump();
    }
  }

  async #sync(): Promise<void> {
    this.#syncing = true;
    const seq = this.#writtenSeq;
    try {
      await this.#store.sync();
      // Also if a failed write meanwhile set `written` back: what is on disk is written too.
      this.#writtenSeq = Math.max(this.#writtenSeq, seq);
      this.#durableSeq = Math.max(this.#durableSeq, seq);
      this.#settle();
    } catch (err) {
      this.#fail(seq, err);
    } finally {
      this.#syncing = false;
      this.#schedulePump();
    }
  }

  /** Resolves every commit whose level is reached. */
  #settle(): void {
    const done = (w: Waiter) => w.seq <= (w.durable ? this.#durableSeq : this.#writtenSeq);
    const settled = this.#waiters.filter(done);
    this.#waiters = this.#waiters.filter((w) => !done(w));
    for (const w of settled) w.resolve();
  }

  /** Rejects the commits the failed step carried; later ones wait for the next write. */
  #fail(seq: number, err: unknown): void {
    // What was written but not synced may be gone with the failure (the kernel drops dirty pages
    // a failed sync could not write): only what is on disk still counts as written.
    this.#writtenSeq = this.#durableSeq;
    const carried = this.#waiters.filter((w) => w.seq <= seq);
    this.#waiters = this.#waiters.filter((w) => w.seq > seq);
    for (const w of carried) w.reject(err);
  }
}
