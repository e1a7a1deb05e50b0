// One line per key: operations queued under the same key run one after another, operations under
// different keys run in parallel. The agent keys its pod operations by pod (src/plan/pod-line.ts:
// one pod, one line, docs/design.md rule 2).

export class KeyedSerializer {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `op` after every earlier operation queued under `key` has settled. */
  run<T>(key: string, op: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(op, op);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    // Forget the key once its queue drains, so the map does not grow with every pod ever seen.
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Number of pods with queued or running operations (for introspection). */
  get busyPods(): number {
    return this.#tails.size;
  }
}
