// Property: whatever the history of a ledger (commits, staged writes, compactions, crashes with
// torn writes cut off or read back as zeros), once its last commit is durable, damage to what was
// synced is refused at load and never taken for a torn append: a changed byte in any line, the
// whole journal zeroed, synced records zeroed within the boot that wrote them, a record missing
// from the middle, the journal lost. Undamaged, the same files load to the committed state.
// (Torn writes that must load: ledger.property.test.ts.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ledger } from '../ledger.ts';
import { attachment, clock, JOURNAL, PATH } from '../testing/journal-fixtures.ts';
import { type LostWrites, MemoryLedgerFs } from '../testing/memory-fs.ts';
import { FileLedgerStore, type JournalBound, LedgerLoadError } from './store.ts';

type Op =
  | { readonly op: 'put' | 'remove' | 'stage'; readonly id: number }
  | { readonly op: 'commit' }
  | { readonly op: 'crash'; readonly torn: number; readonly lost: LostWrites };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constantFrom('put' as const, 'remove' as const, 'stage' as const), id: fc.nat(9) }),
  fc.record({ op: fc.constant('commit' as const) }),
  fc.record({
    op: fc.constant('crash' as const),
    torn: fc.double({ min: 0, max: 1, noNaN: true }),
    lost: fc.constantFrom<LostWrites>('cut', 'zeros'),
  }),
);

type Damage =
  | { readonly kind: 'byte'; readonly line: number; readonly at: number }
  | { readonly kind: 'zeroAll' }
  | { readonly kind: 'zeroLast'; readonly lines: number }
  | { readonly kind: 'dropMiddle'; readonly line: number }
  | { readonly kind: 'missing' };

const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('byte' as const), line: fc.nat(), at: fc.nat() }),
  fc.record({ kind: fc.constant('zeroAll' as const) }),
  fc.record({ kind: fc.constant('zeroLast' as const), lines: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('dropMiddle' as const), line: fc.nat() }),
  fc.record({ kind: fc.constant('missing' as const) }),
);

const boundArb: fc.Arbitrary<JournalBound> = fc.record({
  minBytes: fc.constantFrom(0, 600, 100_000),
  snapshotFactor: fc.constantFrom(0, 1),
});

/** The journal with `d` done to it, or undefined when `d` does not apply to this journal. */
function damaged(journal: string, d: Damage): string | undefined {
  const lines = journal.split('\n').slice(0, -1);
  const rejoin = (l: readonly string[]) => `${l.join('\n')}\n`;
  switch (d.kind) {
    case 'byte': {
      const i = d.line % lines.length;
      const line = lines[i] ?? '';
      const at = d.at % line.length;
      // A different character that is no newline (JSON text holds no 0x0b to turn into one).
      const c = String.fromCharCode(line.charCodeAt(at) ^ 1);
      return rejoin(lines.map((l, k) => (k === i ? l.slice(0, at) + c + l.slice(at + 1) : l)));
    }
    case 'zeroAll':
      return '\0'.repeat(journal.length);
    case 'zeroLast':
      return rejoin(lines.map((l, k) => (k >= lines.length - d.lines ? '\0'.repeat(l.length) : l)));
    case 'dropMiddle': {
      // A record with records after it: the last one's loss would look like one never written.
      if (lines.length < 3) return undefined;
      const i = 1 + (d.line % (lines.length - 2));
      return rejoin(lines.filter((_, k) => k !== i));
    }
    case 'missing':
      return undefined;
  }
}

test('damage to what was synced is refused at load, never dropped as a torn append', async () => {
  await fc.assert(
    fc.asyncProperty(boundArb, fc.array(opArb, { maxLength: 30 }), damageArb, async (bound, ops, damage) => {
      const fs = new MemoryLedgerFs();
      const store = () => new FileLedgerStore(PATH, fs, undefined, bound);
      let ledger = await Ledger.open(store(), clock);
      for (const o of ops) {
        if (o.op === 'put' || o.op === 'stage') ledger.put(attachment(o.id));
        if (o.op === 'remove') ledger.remove(attachment(o.id).key);
        if (o.op === 'stage') await ledger.stage();
        if (o.op === 'commit') await ledger.commit();
        if (o.op === 'crash') {
          fs.crash((_, n) => o.torn * n, o.lost);
          ledger = await Ledger.open(store(), clock);
        }
      }
      // A change of its own makes the last commit write, so everything on disk is synced.
      ledger.put(attachment(99));
      await ledger.commit();
      await ledger.close();
      const committed = ledger.snapshot();
      assert.deepEqual(await store().load(), committed, 'undamaged, the files load to the committed state');

      const journal = fs.files.get(JOURNAL) ?? '';
      assert.ok(journal !== '', 'the snapshot has its journal');
      const bad = damaged(journal, damage);
      if (damage.kind === 'missing') await fs.removeFile(JOURNAL);
      else if (bad === undefined) return;
      else fs.files.set(JOURNAL, bad);
      const err = await store()
        .load()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof LedgerLoadError, `${JSON.stringify(damage)} loaded: ${String(err)}`);
      assert.equal(err.path, JOURNAL);
    }),
    { numRuns: 300 },
  );
});
