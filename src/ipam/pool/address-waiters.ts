// ADDs waiting for the pool to have an address: each with its own deadline, all woken together
// (each then tries to allocate; one that loses the race fails or waits again).

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export class AddressWaiters {
  readonly #waiters = new Set<Waiter>();

  get size(): number {
    return this.#waiters.size;
  }

  /** Resolves on wake(); rejects with timeoutError() after timeoutMs, or on rejectAll. */
  wait(timeoutMs: number, timeoutError: () => Error): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => this.#settle(waiter, timeoutError()), timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  wakeAll(): void {
    for (const w of [...this.#waiters]) this.#settle(w);
  }

  rejectAll(err: Error): void {
    for (const w of [...this.#waiters]) this.#settle(w, err);
  }

  #settle(w: Waiter, err?: Error): void {
    if (!this.#waiters.delete(w)) return;
    clearTimeout(w.timer);
    if (err) w.reject(err);
    else w.resolve();
  }
}
