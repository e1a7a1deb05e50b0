// An in-memory LedgerStore for tests of the modules above the ledger. It takes the ledger's
// changes as the file store's journal does (replayed over what it holds), so every test that
// reopens a ledger from it also checks that each mutation reached the changes of its write.
import type { LedgerChanges } from '../changes.ts';
import { changesJson, parseLedgerChanges, replayChanges } from '../changes.ts';
import { type LedgerSnapshot, parseLedgerSnapshot } from '../format/snapshot.ts';
import type { LedgerStore } from '../storage/store.ts';

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

  async saveChanges(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<void> {
    const held = await this.load();
    if (held === undefined) return this.save(snapshot());
    // Through JSON, as a journal record goes: what the changes do not carry is lost here too.
    const record = parseLedgerChanges(JSON.parse(JSON.stringify(changesJson(changes))), 'changes');
    return this.save(replayChanges(held, [record]));
  }
}
