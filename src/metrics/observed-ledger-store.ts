// The ledger's store, timed: each save is one durable write (fsync) carrying a group commit, the
// cost every ADD and DEL pays twice. A decorator, so the ledger itself knows nothing of metrics.
import type { LedgerStore } from '../ledger/store.ts';

export function observedLedgerStore(
  inner: LedgerStore,
  observe: (ms: number, ok: boolean) => void,
): LedgerStore {
  const timed = async (write: () => Promise<void>): Promise<void> => {
    const started = performance.now();
    try {
      await write();
      observe(performance.now() - started, true);
    } catch (err) {
      observe(performance.now() - started, false);
      throw err;
    }
  };
  const { saveChanges, setAside } = inner;
  return {
    load: () => inner.load(),
    save: (snapshot) => timed(() => inner.save(snapshot)),
    ...(saveChanges === undefined
      ? {}
      : { saveChanges: (changes, snapshot) => timed(() => saveChanges.call(inner, changes, snapshot)) }),
    ...(setAside === undefined ? {} : { setAside: (at: number) => setAside.call(inner, at) }),
  };
}
