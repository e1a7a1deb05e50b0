// An index from a value (an address, a binding key) to the records that hold it, kept up to date by
// every mutation of the Ledger, so the lookups of an ADD or DEL do not scan every record.

export class RecordIndex {
  readonly #holders = new Map<string, Set<string>>();

  /** Record `id` held the values `before` and now holds `after`. */
  update(id: string, before: readonly string[], after: readonly string[]): void {
    for (const v of before) {
      if (after.includes(v)) continue;
      const ids = this.#holders.get(v);
      ids?.delete(id);
      if (ids?.size === 0) this.#holders.delete(v);
    }
    // A record that keeps a value keeps its place among the value's holders.
    for (const v of after) {
      const ids = this.#holders.get(v);
      if (ids === undefined) this.#holders.set(v, new Set([id]));
      else ids.add(id);
    }
  }

  /** The ids of the records holding `value`, oldest first. */
  holders(value: string): readonly string[] {
    const ids = this.#holders.get(value);
    return ids === undefined ? [] : [...ids];
  }

  has(value: string): boolean {
    return this.#holders.has(value);
  }
}
