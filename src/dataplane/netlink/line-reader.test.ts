import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { LineReader } from './line-reader.ts';

function readAll(chunks: readonly Buffer[]): string[] {
  const lines: string[] = [];
  const reader = new LineReader((l) => lines.push(l));
  for (const c of chunks) reader.push(c);
  return lines;
}

/** `bytes` cut into pieces of `size` bytes (the last one shorter). */
function pieces(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < bytes.length; off += size) out.push(bytes.subarray(off, off + size));
  return out;
}

test('a 20 MB answer arriving in 4 KiB chunks is read in time linear in its size', () => {
  // The size of a pod dump with 300,000 routes, as a pipe delivers it to a busy reader.
  const route = '{"dst":"100.10.2.3","dev":"eth0","table":"main","scope":"link"},';
  const line = `{"id":1,"entered":true,"routes":[${route.repeat(320_000)}{}]}`;
  const bytes = Buffer.from(`${line}\n{"id":2}\n`);
  const chunks = pieces(bytes, 4096);
  // The work no reader avoids, measured in this run: joining the bytes and decoding them once.
  const refStart = performance.now();
  const joined = Buffer.concat(chunks).toString('utf8');
  assert.ok(joined.indexOf('\n') > 0);
  const reference = performance.now() - refStart;

  const start = performance.now();
  const lines = readAll(chunks);
  const elapsed = performance.now() - start;
  assert.equal(lines.length, 2);
  assert.equal(lines[0]?.length, line.length);
  assert.equal(lines[1], '{"id":2}');
  // A reader that scans or joins everything buffered on each chunk does thousands of times that.
  const bound = 10 * reference + 250;
  assert.ok(
    elapsed < bound,
    `${chunks.length} chunks took ${elapsed.toFixed(0)} ms (bound ${bound.toFixed(0)} ms)`,
  );
});

test('lines split across chunks, several lines in one chunk, and empty lines come out whole and in order', () => {
  const chunks = ['{"id":1', ',"a":2}\n{"id":2}\n{"id"', ':3}\n\n{"id":4}', '\n'].map((s) => Buffer.from(s));
  assert.deepEqual(readAll(chunks), ['{"id":1,"a":2}', '{"id":2}', '{"id":3}', '', '{"id":4}']);
});

test('a line without its newline yet is held back until the newline arrives', () => {
  const lines: string[] = [];
  const reader = new LineReader((l) => lines.push(l));
  reader.push(Buffer.from('{"id":1}\n{"id":'));
  assert.deepEqual(lines, ['{"id":1}']);
  reader.push(Buffer.from('2}'));
  assert.deepEqual(lines, ['{"id":1}']);
  reader.push(Buffer.from('\n'));
  assert.deepEqual(lines, ['{"id":1}', '{"id":2}']);
});

test('a multi-byte UTF-8 character split across chunks at every byte is decoded whole', () => {
  // Interface names and the kernel's messages may carry any bytes; 2-, 3- and 4-byte characters.
  for (const ch of ['é', '€', '🦀']) {
    const bytes = Buffer.from(`{"ifname":"a${ch}b"}\n`);
    const at = bytes.indexOf(Buffer.from(ch));
    for (let cut = at + 1; cut < at + Buffer.byteLength(ch); cut++) {
      const lines = readAll([bytes.subarray(0, cut), bytes.subarray(cut)]);
      assert.deepEqual(lines, [`{"ifname":"a${ch}b"}`], `cut at byte ${cut} of ${ch}`);
    }
  }
});

test('any cutting of any text into chunks gives the lines of the text', () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }), { maxLength: 12 }),
      fc.array(fc.nat(), { maxLength: 20 }),
      (lines, cuts) => {
        const bytes = Buffer.from(lines.map((l) => `${l.replaceAll('\n', '')}\n`).join(''));
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? bytes.length));
        assert.deepEqual(
          readAll(chunks),
          lines.map((l) => l.replaceAll('\n', '')),
        );
      },
    ),
  );
});
