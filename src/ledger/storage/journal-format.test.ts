import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JournalCorruptError, journalLine, journalTailDamage, scanJournal } from './journal-format.ts';

const records = [
  '{"journal":"j1","follows":3}',
  '{"seq":4,"cooling":{"removed":["10.0.0.1"]}}',
  '{"seq":5,"pod":"né"}',
];
const text = records.map(journalLine).join('');
const lastStart = Buffer.byteLength(records.slice(0, 2).map(journalLine).join(''));

/** The good records, or the line a load refuses, of `journal` read in the same boot or another. */
function judged(journal: string, otherBoot: boolean): readonly string[] | number {
  try {
    const scan = scanJournal(journal);
    const damage = journalTailDamage(scan.tail, otherBoot);
    return damage === undefined ? scan.records : damage.line;
  } catch (err) {
    if (err instanceof JournalCorruptError) return err.line;
    throw err;
  }
}

describe('journal framing', () => {
  test('framed records scan back whole, in order, with their byte count', () => {
    assert.deepEqual(scanJournal(text), { records, goodBytes: Buffer.byteLength(text), tail: [] });
    assert.deepEqual(scanJournal(''), { records: [], goodBytes: 0, tail: [] });
  });

  test('a record cut at any byte (a torn append) is dropped in any boot, the records before it kept', () => {
    const whole = Buffer.from(text);
    for (let cut = lastStart + 1; cut < whole.length; cut++) {
      const journal = whole.subarray(0, cut).toString('utf8');
      assert.equal(scanJournal(journal).goodBytes, lastStart, `cut at ${cut}`);
      for (const otherBoot of [false, true])
        assert.deepEqual(judged(journal, otherBoot), records.slice(0, 2), `cut at ${cut}`);
    }
  });

  test('after another boot, zeros where appends never reached the disk (several in flight) are a torn tail', () => {
    assert.deepEqual(judged(`${text}\0\0\0\0\n\0\0`, true), records);
    const inFlight = [6, 7, 8].map((n) => journalLine(`{"seq":${n}}`)).join('');
    assert.deepEqual(judged(`${text}${'\0'.repeat(inFlight.length)}`, true), records);
    // Part of the batch reached the disk, the rest is zeros.
    assert.deepEqual(judged(`${text}${inFlight.slice(0, 30)}${'\0'.repeat(40)}`, true), [
      ...records,
      '{"seq":6}',
    ]);
  });

  test('within the boot that wrote it, zeros are damage (the page cache keeps what was written)', () => {
    assert.equal(judged(`${text}\0\0\0\0`, false), 4);
    assert.equal(judged(`${text}\0\0\0\0\n\0\0`, false), 4);
  });

  test('a changed byte in a record followed by good records is damage, not a torn tail', () => {
    const damaged = text.replace('10.0.0.1', '10.0.0.2');
    assert.throws(
      () => scanJournal(damaged),
      (err: unknown) =>
        err instanceof JournalCorruptError &&
        err.line === 2 &&
        /checksum .* line 3 after it is a good record/.test(err.message),
    );
  });

  test('a record whose length does not match its frame is refused when good ones follow', () => {
    const lines = text.split('\n');
    lines[0] = lines[0]!.replace(/^\d+/, '99');
    assert.throws(() => scanJournal(lines.join('\n')), /line 1: length 28, the frame says 99/);
  });

  test('a whole last record whose checksum fails is damage in any boot: no lost write makes one', () => {
    const damaged = text.replace('"seq":5', '"seq":6');
    for (const otherBoot of [false, true]) assert.equal(judged(damaged, otherBoot), 3);
    assert.match(
      journalTailDamage(scanJournal(damaged).tail, true)?.message ?? '',
      /line 3: checksum .*a whole line that no lost write leaves; not a torn append/,
    );
  });

  test('the last three records damaged (each line whole) are damage, not a torn tail', () => {
    const more = [...records, '{"seq":6}', '{"seq":7}'];
    const lines = more.map(journalLine);
    const damaged = lines.map((l, i) => (i >= 2 ? l.replace('"seq"', '"sex"') : l)).join('');
    for (const otherBoot of [false, true]) assert.equal(judged(damaged, otherBoot), 3);
  });

  test('a first line that is not whole is damage, never torn: it is synced before any record', () => {
    for (const otherBoot of [false, true]) {
      assert.equal(judged('\0'.repeat(text.length), otherBoot), 1, 'a zero-filled journal');
      assert.equal(judged(text.slice(0, 10), otherBoot), 1, 'a first line cut short');
      assert.equal(
        judged(`x${text.slice(1)}`, otherBoot),
        1,
        'a damaged first line (an error from the scan)',
      );
    }
  });

  test('an unfinished last line that is not the start of a record is damage', () => {
    for (const otherBoot of [false, true]) assert.equal(judged(`${text}hello`, otherBoot), 4);
    assert.deepEqual(judged(`${text}35 0a1b`, false), records, 'the start of a frame');
  });
});
