// How the ledger journal frames its records: one line each, `<byte length> <crc32> <json>\n`, so
// that a record cut short by a crash (a torn append) or changed on disk is recognised as such and
// never replayed. JSON text has no raw newline, so a line is always exactly one record.
import { crc32 } from 'node:zlib';

/** A journal line whose frame does not check out somewhere before the end: the file was damaged. */
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

export interface JournalScan {
  /** The JSON texts of the good records, in order. */
  readonly records: readonly string[];
  /** Bytes of the good records: the file is cut here before it is appended to again. */
  readonly goodBytes: number;
  /** Whether something followed the last good record (a torn append, cut off). */
  readonly torn: boolean;
}

/**
 * The good records of a journal's text. A bad record with nothing good after it is a torn tail (a
 * crash in the middle of an append, which no commit reported as durable): cut off. A bad record
 * followed by a good one is damage to a record a commit may have reported: JournalCorruptError.
 */
export function scanJournal(text: string): JournalScan {
  const lines = text.split('\n');
  // The text after the last newline is an unfinished line: a record is whole only with its newline.
  const unfinished = lines.pop() ?? '';
  const records: string[] = [];
  let goodBytes = 0;
  for (const [i, line] of lines.entries()) {
    const frame = unframe(line);
    if ('json' in frame) {
      records.push(frame.json);
      goodBytes += Buffer.byteLength(line) + 1;
      continue;
    }
    const later = lines.slice(i + 1).findIndex((l) => 'json' in unframe(l));
    if (later >= 0) {
      throw new JournalCorruptError(
        i + 1,
        `${frame.problem}, yet line ${i + 2 + later} after it is a good record`,
      );
    }
    return { records, goodBytes, torn: true };
  }
  return { records, goodBytes, torn: unfinished !== '' };
}
