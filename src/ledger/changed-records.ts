// Which records changed since the last write that carried them: what the next journal record
// holds (each one put as it is then, or removed), so a write costs what changed.
import { LEDGER_LISTS, type LedgerList } from './changes.ts';

export type ChangedIds = Record<LedgerList, Set<string>>;

function none(): ChangedIds {
  return Object.fromEntries(LEDGER_LISTS.map((l) => [l, new Set<string>()])) as ChangedIds;
}

export class ChangedRecords {
  #ids = none();

  mark(list: LedgerList, id: string): void {
    this.#ids[list].add(id);
  }

  /** The ids changed so far; tracking starts afresh. */
  take(): ChangedIds {
    const taken = this.#ids;
    this.#ids = none();
    return taken;
  }

  /** A write that carried `taken` failed: they ride on the next one. */
  restore(taken: ChangedIds): void {
    for (const list of LEDGER_LISTS) for (const id of taken[list]) this.#ids[list].add(id);
  }
}
