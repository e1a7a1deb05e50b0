// The ledger's store, timed: each durable write (fsync) carrying a group commit is observed. A
// decorator, so the ledger itself knows nothing of metrics; it passes on every method the inner
// store has (one it left out would silently fall back to a slower or a missing path).
import type { LedgerStore } from '../../ledger/storage/store.ts';

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
  const { saveChanges, writeChanges, sync, compactionDue, compactWhenQuiet, setAside, close } = inner;
  return {
    load: () => inner.load(),
    save: (snapshot) => timed(() => inner.save(snapshot)),
    ...(saveChanges === undefined
      ? {}
      : { saveChanges: (changes, snapshot) => timed(() => saveChanges.call(inner, changes, snapshot)) }),
    // Not timed: an append without an fdatasync is no durable write.
    ...(writeChanges === undefined
      ? {}
      : { writeChanges: (changes, snapshot) => writeChanges.call(inner, changes, snapshot) }),
    ...(sync === undefined ? {} : { sync: () => timed(() => sync.call(inner)) }),
    ...(compactionDue === undefined ? {} : { compactionDue: () => compactionDue.call(inner) }),
    ...(compactWhenQuiet === undefined
      ? {}
      : {
          compactWhenQuiet: async (snapshot) => {
            let compacted = false;
            await timed(async () => {
              compacted = await compactWhenQuiet.call(inner, snapshot);
            });
            return compacted;
          },
        }),
    ...(setAside === undefined ? {} : { setAside: (at: number) => setAside.call(inner, at) }),
    ...(close === undefined ? {} : { close: () => close.call(inner) }),
  };
}
