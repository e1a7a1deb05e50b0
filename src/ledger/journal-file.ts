// The ledger journal on disk: the changes committed since the snapshot, one framed record per
// write (journal-format.ts), appended and fdatasynced, so a commit costs what it changed rather
// than the whole ledger. The journal stays open between commits: a commit is one write and one
// fdatasync on the open file (where each runs: node-fs.ts, sync-placement.ts), not an open and a
// close around them. The first line says which snapshot the journal follows (its random id and
// sequence number); records carry consecutive sequence numbers after it. A journal whose id is not
// the snapshot's is left over from before a compaction and is never replayed.
import * as nodePath from 'node:path';
import { changesJson, type LedgerChanges, parseLedgerChanges } from './changes.ts';
import { JournalCorruptError, journalLine, scanJournal } from './journal-format.ts';
import { int, LedgerFormatError, nonEmpty, obj } from './json-fields.ts';
import { LedgerLoadError } from './load-error.ts';
import type { AppendHandle, LedgerFsDeps } from './node-fs.ts';
import type { JournalRef } from './snapshot.ts';

/** What a load found in the journal of a snapshot. */
export interface JournalContents {
  /** The records to replay over the snapshot, in order. */
  readonly records: readonly LedgerChanges[];
  /** The sequence number of the last of them (the snapshot's when there are none). */
  readonly seq: number;
  /** Bytes of the journal's good records. */
  readonly bytes: number;
  /**
   * Whether the next record may be appended to this file: not when it is missing, left over from
   * another snapshot, or ends in a torn record (the next write starts a fresh journal instead, so
   * nothing good is ever written after a bad record).
   */
  readonly appendable: boolean;
}

function isMissing(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

export class LedgerJournal {
  readonly #path: string;
  readonly #fs: LedgerFsDeps;
  /** Creates a new file (exclusively, under a fresh temp name) with `data`; returns its name. */
  readonly #createTemp: (data: string) => Promise<string>;
  /** The journal as last opened for appending; undefined until the next append opens it. */
  #handle: AppendHandle | undefined;
  /** Records were appended without an fdatasync since the last one that succeeded. */
  #unsynced = false;
  /**
   * An fdatasync failed: records appended before it may be gone (the kernel drops the pages it
   * could not write, and a later fdatasync reports success), until a new journal replaces this one.
   */
  #syncFailed = false;

  constructor(path: string, fs: LedgerFsDeps, createTemp: (data: string) => Promise<string>) {
    this.#path = path;
    this.#fs = fs;
    this.#createTemp = createTemp;
  }

  get path(): string {
    return this.#path;
  }

  /**
   * Replaces the journal with an empty one that follows snapshot `ref`; returns its size. Written
   * under a temp name and renamed over the old one, so a crash leaves one or the other, whole.
   */
  async start(ref: JournalRef): Promise<number> {
    const header = journalLine(JSON.stringify({ journal: ref.id, follows: ref.seq }));
    // The open handle is the replaced journal's: appends go to the new one from here on.
    await this.close();
    let journalTmp = '';
    try {
      journalTmp = await this.#createTemp(header);
      await this.#fs.syncFile(journalTmp);
      await this.#fs.rename(journalTmp, this.#path);
      await this.#fs.syncDir(nodePath.dirname(this.#path));
    } catch (err) {
      if (journalTmp !== '') await this.#fs.removeFile(journalTmp).catch(() => {});
      throw new Error(`cannot start ledger journal ${this.#path}: ${String(err)}`, { cause: err });
    }
    // The snapshot before it holds everything the old journal's records did.
    this.#unsynced = false;
    this.#syncFailed = false;
    return Buffer.byteLength(header);
  }

  /**
   * Appends record `seq` and, when `sync`, fdatasyncs it (with whatever was appended unsynced
   * before it); returns the bytes it took. A synced append resolves only once the fdatasync has:
   * durable before success. After a failure the handle is closed (what reached the file is
   * unknown, and a failed fdatasync is never retried on the same file).
   */
  async append(seq: number, changes: LedgerChanges, sync = true): Promise<number> {
    const line = journalLine(JSON.stringify({ seq, ...changesJson(changes) }));
    try {
      this.#handle ??= await this.#fs.openAppend(this.#path);
      await this.#handle.append(line);
      this.#unsynced = true;
      if (sync) await this.#syncHandle(this.#handle);
    } catch (err) {
      await this.close();
      throw new Error(`cannot append to ledger journal ${this.#path}: ${String(err)}`, { cause: err });
    }
    return Buffer.byteLength(line);
  }

  /** fdatasyncs what earlier appends left unsynced (nothing to do when none did). */
  async sync(): Promise<void> {
    try {
      if (this.#syncFailed) throw new Error('an earlier fdatasync failed: records before it may be lost');
      const handle = this.#handle;
      // close() syncs what it leaves, or marks the journal failed.
      if (handle === undefined || !this.#unsynced) return;
      await this.#syncHandle(handle);
    } catch (err) {
      await this.close();
      throw new Error(`cannot sync ledger journal ${this.#path}: ${String(err)}`, { cause: err });
    }
  }

  async #syncHandle(handle: AppendHandle): Promise<void> {
    // Cleared first: an append made while this sync runs may not be covered by it.
    this.#unsynced = false;
    try {
      await handle.syncData();
    } catch (err) {
      this.#syncFailed = true;
      throw err;
    }
  }

  /**
   * Closes the open journal, if any; the next append opens it again. Never fails: records
   * appended unsynced are synced first, and if that fails the next sync() says so.
   */
  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    if (handle !== undefined && this.#unsynced) await this.#syncHandle(handle).catch(() => {});
    await handle?.close().catch(() => {});
  }

  /** The journal's records after snapshot `ref`; LedgerLoadError for a damaged journal. */
  async read(ref: JournalRef): Promise<JournalContents> {
    const none = { records: [], seq: ref.seq, bytes: 0, appendable: false };
    const text = await this.#fs.readFile(this.#path);
    if (text === undefined) return none;
    let lines: readonly string[];
    let goodBytes: number;
    let torn: boolean;
    try {
      ({ records: lines, goodBytes, torn } = scanJournal(text));
    } catch (err) {
      if (!(err instanceof JournalCorruptError)) throw err;
      throw this.#refuse(`line ${err.line}`, `a record is damaged: ${err.message}`, err);
    }
    const [header, ...records] = lines;
    // Nothing whole (an empty file, a torn first line): no record was ever durable in it.
    if (header === undefined) return none;
    const follows = this.#parse(header, 1, (o) => ({
      id: nonEmpty(o, 'journal', 'header'),
      seq: int(o, 'follows', 'header'),
    }));
    if (follows.id !== ref.id) return none;
    if (follows.seq !== ref.seq) {
      throw this.#refuse(
        'header.follows',
        `follows change ${follows.seq}, the snapshot covers up to ${ref.seq}`,
      );
    }
    const changes = records.map((json, i) =>
      this.#parse(json, i + 2, (o) => {
        const seq = int(o, 'seq', `record ${i + 1}`);
        if (seq !== ref.seq + i + 1) {
          throw new LedgerFormatError(`record ${i + 1}.seq`, `expected ${ref.seq + i + 1}, got ${seq}`);
        }
        return parseLedgerChanges(o, `record ${i + 1}`);
      }),
    );
    return { records: changes, seq: ref.seq + changes.length, bytes: goodBytes, appendable: !torn };
  }

  /** Parses one record's JSON (whose frame checked out, so a bad one is damage, not a torn write). */
  #parse<T>(json: string, line: number, read: (o: Record<string, unknown>) => T): T {
    try {
      return read(obj(JSON.parse(json), `line ${line}`));
    } catch (err) {
      const field = err instanceof LedgerFormatError ? err.field : `line ${line}`;
      throw this.#refuse(field, `line ${line}: ${err instanceof Error ? err.message : String(err)}`, err);
    }
  }

  #refuse(field: string, problem: string, cause?: unknown): LedgerLoadError {
    return new LedgerLoadError(
      this.#path,
      field,
      `ledger journal ${this.#path} cannot be trusted; refusing to start from it: ${problem}`,
      cause === undefined ? undefined : { cause },
    );
  }

  /** Moves the journal to `<journal>.corrupt-<stamp>` (no journal: nothing to move). */
  async setAside(stamp: string): Promise<void> {
    await this.close();
    try {
      await this.#fs.rename(this.#path, `${this.#path}.corrupt-${stamp}`);
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
  }
}
