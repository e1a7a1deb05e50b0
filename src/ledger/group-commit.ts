// Group commit: while one write is in flight, later commits wait for the next write, so a burst of
// N pod operations costs about two writes instead of N. Durable before success: a commit resolves
// only once a write that began after its changes has succeeded.

interface Waiter {
  /** The change sequence number this commit must see on disk. */
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class GroupCommit {
  /** The sequence number of the latest change (the owner increments it per mutation). */
  readonly #latest: () => number;
  /** Makes every change up to the latest durable; rejects when it could not. */
  readonly #write: () => Promise<void>;
  /** The highest sequence number known to be on disk. */
  #durableSeq = 0;
  #writing = false;
  #flushScheduled = false;
  #waiters: Waiter[] = [];

  constructor(latest: () => number, write: () => Promise<void>) {
    this.#latest = latest;
    this.#write = write;
  }

  /**
   * Resolves once every change made before this call is on disk; rejects if the write that
   * carried them failed (the changes stay in memory and ride on the next write).
   */
  commit(): Promise<void> {
    const seq = this.#latest();
    if (seq <= this.#durableSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, resolve, reject });
      this.#scheduleFlush();
    });
  }

  #scheduleFlush(): void {
    if (this.#writing || this.#flushScheduled) return;
    this.#flushScheduled = true;
    // Defer to a microtask so that commits issued in the same tick share one write.
    queueMicrotask(() => {
      this.#flushScheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#writing || this.#waiters.length === 0) return;
    this.#writing = true;
    const seq = this.#latest();
    let failure: { err: unknown } | undefined;
    try {
      await this.#write();
      this.#durableSeq = Math.max(this.#durableSeq, seq);
    } catch (err) {
      failure = { err };
    }
    this.#writing = false;
    // Settle exactly the commits whose changes this write carried; later ones wait for the next.
    const carried = this.#waiters.filter((w) => w.seq <= seq);
    this.#waiters = this.#waiters.filter((w) => w.seq > seq);
    for (const w of carried) {
      if (failure === undefined) w.resolve();
      else w.reject(failure.err);
    }
    if (this.#waiters.length > 0) this.#scheduleFlush();
  }
}
