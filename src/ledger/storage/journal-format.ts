// How the ledger journal frames its records: one line each, `<byte length> <crc32> <json>\n`, so
// that a record cut short by a crash (a torn append) or changed on disk is recognised as such and
// never replayed. JSON text has no raw newline, so a line is always exactly one record.
//
// What may be dropped as torn (durable before success: never a record a commit reported durable).
// A crash loses only what no fdatasync covered, and it loses it in one of two ways: the end of the
// file is cut off, or (a machine that stopped, with delayed allocation) pages never written read
// back as zeros. Within one boot the page cache keeps every byte written, so the only loss is the
// one line a dying process was writing, cut short. Hence (journalTailDamage below):
// - the first line is never torn: it is synced and renamed into place before any record is
//   appended (journal-file.ts), so a journal whose first line is bad is damaged;
// - a bad line followed by a good one is damage (an fdatasync covers everything before it);
// - the end after the last good record may be dropped only as a lost write leaves it: in the boot
//   that wrote the journal, one unfinished line (no newline) that is the start of a frame; after
//   another boot, in addition, lines holding zero bytes. A whole line without a zero byte that
//   fails its frame is damage, in any boot: no lost write makes one.
// Damage that looks exactly like a lost write (zeros or a cut at the very end, written over
// records that were synced) cannot be told from one by the file alone: it needs a disk that lost
// data it reported as flushed.
import { crc32 } from 'node:zlib';

/** A journal line whose frame does not check out where a crash cannot explain it: the file was damaged. */
export class JournalCorruptError extends Error {
  constructor(
    /** 1-based line number of the bad record. */
    readonly line: number,
    problem: string,
  ) {
    super(`line ${line}: ${problem}`);
    this.name = 'JournalCorruptError';
  }
}

function checksum(json: string): string {
  return crc32(json).toString(16).padStart(8, '0');
}

/** The journal line that carries `json` (one JSON text, no newline in it). */
export function journalLine(json: string): string {
  return `${Buffer.byteLength(json)} ${checksum(json)} ${json}\n`;
}

const FRAME = /^(\d{1,9}) ([0-9a-f]{8}) (.*)$/s;

/** The JSON text of a framed line (without its newline), or why the frame does not hold. */
function unframe(line: string): { json: string } | { problem: string } {
  const m = FRAME.exec(line);
  if (m === null) return { problem: 'not a framed record' };
  const [, length, sum, json = ''] = m;
  if (Buffer.byteLength(json) !== Number(length))
    return { problem: `length ${Buffer.byteLength(json)}, the frame says ${length}` };
  if (checksum(json) !== sum) return { problem: `checksum ${checksum(json)}, the frame says ${sum}` };
  return { json };
}

/** Whether `text` (no newline) is the beginning of a frame that `journalLine` would write. */
function startsAFrame(text: string): boolean {
  if (/^\d{1,9}( [0-9a-f]{0,8})?$/.test(text)) return true;
  const m = /^(\d{1,9}) [0-9a-f]{8} (.*)$/s.exec(text);
  // Cut short: no more bytes than the frame announces (a whole record without its newline is cut too).
  return m !== null && Buffer.byteLength(m[2] ?? '') <= Number(m[1]);
}

/** A line after the last good record. */
export interface BadLine {
  /** 1-based line number. */
  readonly line: number;
  /** Why its frame does not hold. */
  readonly problem: string;
  /** The file ends inside it (no newline after it). */
  readonly unfinished: boolean;
  /** It holds zero bytes (pages that were never written, read back after a crash). */
  readonly zeros: boolean;
  /** It is the beginning of a frame, cut short. */
  readonly framePrefix: boolean;
}

export interface JournalScan {
  /** The JSON texts of the good records, in order. */
  readonly records: readonly string[];
  /** Bytes of the good records: the file is cut here before it is appended to again. */
  readonly goodBytes: number;
  /** What follows the last good record (empty: the journal ends with it). */
  readonly tail: readonly BadLine[];
}

function badLine(line: number, text: string, unfinished: boolean, problem: string): BadLine {
  return {
    line,
    problem,
    unfinished,
    zeros: text.includes('\0'),
    framePrefix: unfinished && !text.includes('\0') && startsAFrame(text),
  };
}

/**
 * The good records of a journal's text and what follows them. A bad record followed by a good one
 * is damage to a record a commit may have reported durable: JournalCorruptError. Whether the end
 * after the last good record may be dropped as torn is journalTailDamage's to say.
 */
export function scanJournal(text: string): JournalScan {
  const lines = text.split('\n');
  // The text after the last newline is an unfinished line: a record is whole only with its newline.
  const unfinished = lines.pop() ?? '';
  const frames = lines.map(unframe);
  const bad = frames.findIndex((f) => 'problem' in f);
  const good = bad < 0 ? frames.length : bad;
  const later = frames.findIndex((f, i) => i > good && 'json' in f);
  const problem = (i: number) => {
    const f = frames[i];
    return f !== undefined && 'problem' in f ? f.problem : '';
  };
  if (later >= 0)
    throw new JournalCorruptError(
      good + 1,
      `${problem(good)}, yet line ${later + 1} after it is a good record`,
    );
  const tail = lines.slice(good).map((l, k) => badLine(good + k + 1, l, false, problem(good + k)));
  if (unfinished !== '') tail.push(badLine(lines.length + 1, unfinished, true, 'cut short (no newline)'));
  return {
    records: frames.slice(0, good).flatMap((f) => ('json' in f ? [f.json] : [])),
    goodBytes: lines.slice(0, good).reduce((n, l) => n + Buffer.byteLength(l) + 1, 0),
    tail,
  };
}

/**
 * Why the end of a journal after its last good record is damage rather than a torn append, or
 * undefined when it may be dropped as torn (the rule at the top of this file). `otherBoot`: the
 * machine may have stopped since the journal was written (another boot, or one not known).
 */
export function journalTailDamage(
  tail: readonly BadLine[],
  otherBoot: boolean,
): JournalCorruptError | undefined {
  for (const bad of tail) {
    if (bad.line === 1)
      return new JournalCorruptError(
        1,
        `${bad.problem}: the first line was synced before any record, never torn`,
      );
    if (bad.zeros && otherBoot) continue;
    if (bad.framePrefix && bad === tail[tail.length - 1]) continue;
    const why = bad.zeros
      ? 'zero bytes within the boot that wrote it (the page cache keeps every byte written)'
      : bad.unfinished
        ? 'not the beginning of a record'
        : 'a whole line that no lost write leaves';
    return new JournalCorruptError(bad.line, `${bad.problem}: ${why}; not a torn append`);
  }
  return undefined;
}
