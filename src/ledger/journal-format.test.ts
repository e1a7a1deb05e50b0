import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JournalCorruptError, journalLine, scanJournal } from './journal-format.ts';

const records = [
  '{"journal":"j1","follows":3}',
  '{"seq":4,"cooling":{"removed":["10.0.0.1"]}}',
  '{"seq":5,"pod":"né"}',
];
const text = records.map(journalLine).join('');

describe('journal framing', () => {
  test('framed records scan back whole, in order, with their byte count', () => {
    assert.deepEqual(scanJournal(text), { records, goodBytes: Buffer.byteLength(text), torn: false });
    assert.deepEqual(scanJournal(''), { records: [], goodBytes: 0, torn: false });
  });

  test('a record cut at any byte (a torn append) is cut off and the records before it kept', () => {
    const whole = Buffer.from(text);
    const lastStart = Buffer.byteLength(records.slice(0, 2).map(journalLine).join(''));
    for (let cut = lastStart + 1; cut < whole.length; cut++) {
      const scan = scanJournal(whole.subarray(0, cut).toString('utf8'));
      assert.deepEqual(
        scan,
        { records: records.slice(0, 2), goodBytes: lastStart, torn: true },
        `cut at ${cut}`,
      );
    }
  });

  test('zeros or garbage after the last record (a torn append the filesystem padded) are a torn tail', () => {
    assert.deepEqual(scanJournal(`${text}\0\0\0\0\n\0\0`), {
      records,
      goodBytes: Buffer.byteLength(text),
      torn: true,
    });
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

  test('a last record whose checksum fails is cut off as torn', () => {
    const damaged = text.replace('"seq":5', '"seq":6');
    assert.deepEqual(scanJournal(damaged).records, records.slice(0, 2));
    assert.equal(scanJournal(damaged).torn, true);
  });
});
