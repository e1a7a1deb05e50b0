// The ledger journal on disk: the changes committed since the snapshot, one framed record per
// write (journal-format.ts), appended and fdatasynced, so a commit costs what it changed rather
// than the whole ledger. The journal stays open between commits: a commit is one write and one
// fdatasync on the open file (where each runs: node-fs.ts, sync-thread.ts), not an open and a
// close around them. The first line says which snapshot the journal follows (its random id and
// sequence number, and the boot it was written in); records carry consecutive sequence numbers
// after it. A journal whose id is not the snapshot's is left over from before a compaction and is
// never replayed. What a load may drop as a torn append, and what it refuses as damage:
// journal-format.ts.
import * as nodePath from 'node:path';
import { changesJson, type LedgerChanges, parseLedgerChanges } from '../changes.ts';
import { int, LedgerFormatError, nonEmpty, obj, optStr } from '../format/json-fields.ts';
import type { JournalRef } from '../format/snapshot.ts';
import { JournalCorruptError, journalLine, journalTailDamage, scanJournal } from './journal-format.ts';
import { LedgerLoadError } from './load-error.ts';
import type { AppendHandle, LedgerFsDeps } from './node-fs.ts';

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
   * another snapshot, ends in a torn record (the next write starts a fresh journal instead, so
   * nothing good is ever written after a bad record), or was written in another boot (so that a
   * journal's records are all of the boot its first line names).
   */
  readonly appendable: boolean;
}

interface JournalHeader {
  readonly id: string;
  readonly follows: number;
  readonly boot: string | undefined;
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
  /** The id of the journal at the path (null: none there); undefined: not known, read it. */
  #onDisk: string | null | undefined;

  constructor(path: string, fs: LedgerFsDeps, createTemp: (data: string) => Promise<string>) {
    this.#path = path;
    this.#fs = fs;
    this.#createTemp = createTemp;
  }

  get path(): string {
    return this.#path;
  }

  /**
   * Replaces the journal with an empty one that follows snapshot `ref`, written in boot `boot`;
   * returns its size. Written under a temp name, synced and renamed over the old one, so a crash
   * leaves one or the other, whole: a journal's first line is never torn.
   */
  async start(ref: JournalRef, boot: string | undefined): Promise<number> {
    const header = journalLine(
      JSON.stringify({ journal: ref.id, follows: ref.seq, ...(boot === undefined ? {} : { boot }) }),
    );
    // The open handle is the replaced journal's: appends go to the new one from here on.
    await this.close();
    // Until the rename is known to be done, which journal is there is not known.
    this.#onDisk = undefined;
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
    this.#onDisk = ref.id;
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

  /**
   * The journal's records after snapshot `ref`, read in boot `boot`; LedgerLoadError for a journal
   * that is damaged, missing or not this snapshot's where the snapshot says which must be there
   * (`ref.replaces`). Only a torn append at the end is dropped (journal-format.ts).
   */
  async read(ref: JournalRef, boot: string | undefined): Promise<JournalContents> {
    const none = { records: [], seq: ref.seq, bytes: 0, appendable: false };
    const text = await this.#fs.readFile(this.#path);
    if (text === undefined) {
      this.#onDisk = null;
      // A compaction renames its journal over the one it replaced: never none after there was one.
      if (typeof ref.replaces === 'string')
        throw this.#refuse('journal', `it is missing, yet its snapshot replaced journal ${ref.replaces}`);
      return none;
    }
    let scan: ReturnType<typeof scanJournal>;
    try {
      scan = scanJournal(text);
    } catch (err) {
      if (!(err instanceof JournalCorruptError)) throw err;
      throw this.#refuse(`line ${err.line}`, `a record is damaged: ${err.message}`, err);
    }
    const [first, ...records] = scan.records;
    if (first === undefined) {
      const bad = journalTailDamage(scan.tail, true) ?? new JournalCorruptError(1, 'the file is empty');
      throw this.#refuse('line 1', `its first line is not whole: ${bad.message}`, bad);
    }
    const header = this.#parse(
      first,
      1,
      (o): JournalHeader => ({
        id: nonEmpty(o, 'journal', 'header'),
        follows: int(o, 'follows', 'header'),
        boot: optStr(o, 'boot', 'header'),
      }),
    );
    this.#onDisk = header.id;
    if (header.id !== ref.id) {
      // Left over from before the compaction that wrote the snapshot: never replayed. A snapshot
      // that names the journal it replaced allows only that one (older ones allow any).
      if (ref.replaces !== undefined && header.id !== ref.replaces) {
        throw this.#refuse(
          'header.journal',
          `journal ${header.id} is neither the snapshot's (${ref.id}) nor the one it replaced (${ref.replaces ?? 'none'})`,
        );
      }
      return none;
    }
    if (header.follows !== ref.seq) {
      throw this.#refuse(
        'header.follows',
        `follows change ${header.follows}, the snapshot covers up to ${ref.seq}`,
      );
    }
    // Another boot (or one not known): the machine may have stopped since, losing unsynced pages.
    const otherBoot = header.boot === undefined || boot === undefined || header.boot !== boot;
    const damage = journalTailDamage(scan.tail, otherBoot);
    if (damage !== undefined)
      throw this.#refuse(`line ${damage.line}`, `a record is damaged: ${damage.message}`, damage);
    const changes = records.map((json, i) =>
      this.#parse(json, i + 2, (o) => {
        const seq = int(o, 'seq', `record ${i + 1}`);
        if (seq !== ref.seq + i + 1) {
          throw new LedgerFormatError(`record ${i + 1}.seq`, `expected ${ref.seq + i + 1}, got ${seq}`);
        }
        return parseLedgerChanges(o, `record ${i + 1}`);
      }),
    );
    return {
      records: changes,
      seq: ref.seq + changes.length,
      bytes: scan.goodBytes,
      appendable: scan.tail.length === 0 && header.boot === boot,
    };
  }

  /** The id of the journal at the path now (null: none, or none whose first line reads). */
  async onDisk(): Promise<string | null> {
    if (this.#onDisk === undefined) {
      const text = (await this.#fs.readFile(this.#path)) ?? '';
      const [first] = scanJournal(text.slice(0, text.indexOf('\n') + 1)).records;
      let id: unknown;
      try {
        id = first === undefined ? undefined : (JSON.parse(first) as { journal?: unknown }).journal;
      } catch {
        id = undefined;
      }
      this.#onDisk = typeof id === 'string' && id !== '' ? id : null;
    }
    return this.#onDisk;
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
    this.#onDisk = undefined;
    try {
      await this.#fs.rename(this.#path, `${this.#path}.corrupt-${stamp}`);
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
    this.#onDisk = null;
  }
}
