// An in-memory LedgerStore for tests of the modules above the ledger.
import { type LedgerSnapshot, parseLedgerSnapshot } from '../snapshot.ts';
import type { LedgerStore } from '../store.ts';

/** Keeps the serialized form so later mutation cannot leak into a saved snapshot. */
export class MemoryLedgerStore implements LedgerStore {
  #saved: string | undefined;
  saves = 0;

  constructor(initial?: LedgerSnapshot) {
    this.#saved = initial === undefined ? undefined : JSON.stringify(initial);
  }

  async load(): Promise<LedgerSnapshot | undefined> {
    return this.#saved === undefined ? undefined : parseLedgerSnapshot(JSON.parse(this.#saved));
  }

  async save(snapshot: LedgerSnapshot): Promise<void> {
    this.#saved = JSON.stringify(snapshot);
    this.saves++;
  }
}
