// Where the ledger lives. The file store keeps a snapshot of the whole ledger and a journal of
// the changes committed since (journal-file.ts). A commit appends one record to the journal and
// fdatasyncs it, so its cost follows what it changed, not how many attachments there are. When
// the journal has grown past a bound, it is compacted: a fresh snapshot written atomically (temp
// file in the same directory, fsync, rename, fsync the directory), naming a new journal id, then a
// new empty journal. The compaction waits until the ledger is quiet (group-commit.ts): written in
// the middle of a burst it would hold every commit behind it (a burst on a fresh node crosses the
// 64 KiB bound). Past BURST_SLACK times the bound the
// next write compacts at once, so the journal stays bounded however long a burst lasts. A crash
// at any point leaves a snapshot plus either its own journal or a left-over one that is never
// replayed: durable before success, and no change applied twice or lost.

import { randomBytes } from 'node:crypto';
import * as nodePath from 'node:path';
import { type LedgerChanges, replayChanges } from '../changes.ts';
import { checkLedgerInvariants } from '../format/invariants.ts';
import { LedgerJournal } from './journal-file.ts';
import { LedgerLoadError, LedgerTooNewError } from './load-error.ts';
import { type LedgerFsDeps, nodeLedgerFs } from './node-fs.ts';

export { LedgerLoadError, LedgerTooNewError } from './load-error.ts';
export type { LedgerFsDeps } from './node-fs.ts';

import {
  type JournalRef,
  LEDGER_SCHEMA_VERSION,
  LedgerFormatError,
  type LedgerSnapshot,
  parseJournalRef,
  parseLedgerSnapshot,
} from '../format/snapshot.ts';

export interface LedgerStore {
  /** The last saved state, or undefined on a fresh start (nothing saved yet). */
  load(): Promise<LedgerSnapshot | undefined>;
  /** Writes the whole state; resolves only once it is durable. */
  save(snapshot: LedgerSnapshot): Promise<void>;
  /**
   * Writes what changed since the last write that succeeded (a store without it gets save());
   * `snapshot` gives the whole state should the store want it. Resolves only once durable.
   */
  saveChanges?(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<void>;
  /**
   * As saveChanges, but resolves once the changes are written, before they are synced
   * (group-commit.ts, level `written`); true when the write was durable anyway (a compaction).
   * A store without it saves every change durably.
   */
  writeChanges?(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<boolean>;
  /** Makes everything writeChanges wrote durable. */
  sync?(): Promise<void>;
  /**
   * Whether a compaction is due that can wait for a quiet ledger: the journal is past its bound
   * (not yet past the slack), or there is none to append to.
   */
  compactionDue?(): boolean;
  /** Makes that compaction from `snapshot` (the whole state); false when none is due. */
  compactWhenQuiet?(snapshot: () => LedgerSnapshot): Promise<boolean>;
  /**
   * Moves a stored ledger that load() refused out of the way (kept for an operator, under a name
   * with the time `at`), so the agent can start; returns where the snapshot went.
   */
  setAside?(at: number): Promise<string>;
  /** Releases what the store keeps open between writes (a later write opens it again). */
  close?(): Promise<void>;
}

/** When the journal is compacted into a fresh snapshot: past the larger of the two. */
export interface JournalBound {
  readonly minBytes: number;
  /** A multiple of the snapshot's size: compaction's cost is then spread over as many commits. */
  readonly snapshotFactor: number;
}

export const DEFAULT_JOURNAL_BOUND: JournalBound = { minBytes: 64 * 1024, snapshotFactor: 4 };

/** How far past its bound a burst may take the journal before a write compacts it at once. */
export const BURST_SLACK = 2;

/** A fresh temp name suffix per save: nothing planted at a predictable name is ever written through. */
function randomTempSuffix(): string {
  return randomBytes(8).toString('hex');
}

/** How many taken temp names a save tries before it gives up (each is a fresh random name). */
const TEMP_ATTEMPTS = 4;

/** The journal appends go to, as this store last wrote it. */
interface OpenJournal {
  readonly id: string;
  /** Sequence number of its last record (the snapshot's when it has none). */
  readonly seq: number;
  readonly bytes: number;
}

export class FileLedgerStore implements LedgerStore {
  readonly #path: string;
  readonly #fs: LedgerFsDeps;
  readonly #tempSuffix: () => string;
  readonly #journal: LedgerJournal;
  readonly #bound: JournalBound;
  /** Where the next change is appended; undefined: the next write is a compaction. */
  #open: OpenJournal | undefined;
  /** The last sequence number written (a compaction takes one too). */
  #seq = 0;
  #snapshotBytes = 0;
  /** The boot this process runs in (a journal names the one it was written in); read once. */
  #boot: Promise<string | undefined> | undefined;

  constructor(
    path: string,
    fs: LedgerFsDeps = nodeLedgerFs,
    tempSuffix: () => string = randomTempSuffix,
    bound: JournalBound = DEFAULT_JOURNAL_BOUND,
  ) {
    this.#path = path;
    this.#fs = fs;
    this.#tempSuffix = tempSuffix;
    this.#bound = bound;
    this.#journal = new LedgerJournal(`${path}.journal`, fs, (data) => this.#createTemp(data));
  }

  get path(): string {
    return this.#path;
  }

  /** The journal beside the snapshot (`<ledger>.journal`). */
  get journalPath(): string {
    return this.#journal.path;
  }

  /** Temp files of saves that a crash interrupted: `<name>.tmp-*` beside the ledger. */
  async #removeLeftoverTemps(): Promise<void> {
    const dir = nodePath.dirname(this.#path);
    const prefix = `${nodePath.basename(this.#path)}.tmp`;
    for (const name of await this.#fs.listDir(dir)) {
      if (name.startsWith(prefix)) await this.#fs.removeFile(nodePath.join(dir, name));
    }
  }

  async load(): Promise<LedgerSnapshot | undefined> {
    await this.#journal.close();
    await this.#removeLeftoverTemps();
    this.#open = undefined;
    const text = await this.#fs.readFile(this.#path);
    // No snapshot: a fresh start (a journal without one is left over and never replayed).
    if (text === undefined) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new LedgerLoadError(
        this.#path,
        undefined,
        `ledger ${this.#path} is not valid JSON: ${String(err)}`,
        {
          cause: err,
        },
      );
    }
    // A downgrade, not damage: refused as it is (openLedger sets only damaged files aside).
    const version = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
    if (typeof version === 'number' && version > LEDGER_SCHEMA_VERSION)
      throw new LedgerTooNewError(this.#path, version, LEDGER_SCHEMA_VERSION);
    let snapshot: LedgerSnapshot;
    let ref: JournalRef | undefined;
    try {
      snapshot = parseLedgerSnapshot(json);
      ref = parseJournalRef(json);
      checkLedgerInvariants(snapshot);
    } catch (err) {
      throw this.#refused(this.#path, err);
    }
    this.#snapshotBytes = Buffer.byteLength(text);
    if (ref === undefined) return snapshot;
    const journal = await this.#journal.read(ref, await this.#bootId());
    this.#seq = journal.seq;
    if (journal.appendable) this.#open = { id: ref.id, seq: journal.seq, bytes: journal.bytes };
    const replayed = replayChanges(snapshot, journal.records);
    try {
      checkLedgerInvariants(replayed);
    } catch (err) {
      throw this.#refused(this.journalPath, err, 'with its journal replayed');
    }
    return replayed;
  }

  /** A snapshot (or the journal after it) that does not parse or breaks an invariant: refused. */
  #refused(path: string, err: unknown, after = ''): unknown {
    if (!(err instanceof LedgerFormatError)) return err;
    const what = path === this.#path ? `ledger ${path}` : `ledger ${this.#path} ${after}`;
    const message = `${what} is corrupt; refusing to start from it: ${err.message}`;
    return new LedgerLoadError(path, err.field, message, { cause: err });
  }

  #bootId(): Promise<string | undefined> {
    this.#boot ??= this.#fs.bootId?.() ?? Promise.resolve(undefined);
    return this.#boot;
  }

  save(snapshot: LedgerSnapshot): Promise<void> {
    return this.#compact(snapshot);
  }

  async saveChanges(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<void> {
    await this.#append(changes, snapshot, true);
  }

  writeChanges(changes: LedgerChanges, snapshot: () => LedgerSnapshot): Promise<boolean> {
    return this.#append(changes, snapshot, false);
  }

  async sync(): Promise<void> {
    // After a failure nothing written since the last compaction counts: the next write compacts.
    if (this.#open === undefined) throw new Error(`ledger journal ${this.journalPath}: nothing to sync`);
    try {
      await this.#journal.sync();
    } catch (err) {
      this.#open = undefined;
      throw err;
    }
  }

  compactionDue(): boolean {
    // No journal to append to (a fresh node, a torn journal, a failed write): the next write
    // would have to compact anyway.
    return this.#open === undefined || this.#open.bytes > this.#limit();
  }

  async compactWhenQuiet(snapshot: () => LedgerSnapshot): Promise<boolean> {
    if (!this.compactionDue()) return false;
    await this.#compact(snapshot());
    return true;
  }

  /** The journal's bound: compaction's cost is spread over as many commits as the snapshot's size. */
  #limit(): number {
    return Math.max(this.#bound.minBytes, this.#bound.snapshotFactor * this.#snapshotBytes);
  }

  /**
   * One journal record, fdatasynced when `sync`, or a compaction when one cannot wait any longer;
   * true when it synced.
   */
  async #append(changes: LedgerChanges, snapshot: () => LedgerSnapshot, sync: boolean): Promise<boolean> {
    const open = this.#open;
    if (open === undefined || open.bytes > BURST_SLACK * this.#limit()) {
      await this.#compact(snapshot());
      return true;
    }
    const seq = open.seq + 1;
    let bytes: number;
    try {
      bytes = await this.#journal.append(seq, changes, sync);
    } catch (err) {
      // What reached the file is unknown (perhaps a torn record): never append after it.
      this.#open = undefined;
      throw err;
    }
    this.#open = { id: open.id, seq, bytes: open.bytes + bytes };
    this.#seq = seq;
    return sync;
  }

  /** A fresh snapshot of the whole state, then a new empty journal after it. */
  async #compact(snapshot: LedgerSnapshot): Promise<void> {
    this.#open = undefined;
    // A new id per journal, so a left-over journal is never taken for this snapshot's; and the one
    // it replaces, so that a load can tell that one (a crash before the new one is in place) from
    // a journal that is lost or not this snapshot's.
    const replaces = await this.#journal.onDisk();
    const ref: JournalRef = { id: randomBytes(8).toString('hex'), seq: ++this.#seq, replaces };
    this.#snapshotBytes = await this.#writeSnapshot({ ...snapshot, journal: ref });
    const bytes = await this.#journal.start(ref, await this.#bootId());
    this.#open = { id: ref.id, seq: ref.seq, bytes };
    // A snapshot written where no journal was allows none (a crash before its journal is in
    // place); the next one names this journal, so that losing it later is noticed, not taken for
    // that crash. One more snapshot on a fresh node, after a recovery, or after an upgrade.
    if (replaces === null) await this.#compact(snapshot);
  }

  /** Writes the snapshot atomically; returns its size. */
  async #writeSnapshot(snapshot: LedgerSnapshot & { readonly journal: JournalRef }): Promise<number> {
    // The temp file must be in the same directory: rename is atomic only within one filesystem.
    // It is created exclusively under a fresh name, so a link or file planted there is refused,
    // never written through.
    const data = `${JSON.stringify(snapshot)}\n`;
    let tmp = '';
    try {
      tmp = await this.#createTemp(data);
      await this.#fs.syncFile(tmp);
      await this.#fs.rename(tmp, this.#path);
    } catch (err) {
      if (tmp !== '') await this.#fs.removeFile(tmp).catch(() => {});
      throw new Error(`cannot save ledger ${this.#path}: ${String(err)}`, { cause: err });
    }
    try {
      await this.#fs.syncDir(nodePath.dirname(this.#path));
    } catch (err) {
      throw new Error(`cannot save ledger ${this.#path}: fsync of its directory failed: ${String(err)}`, {
        cause: err,
      });
    }
    return Buffer.byteLength(data);
  }

  async #createTemp(data: string): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const tmp = `${this.#path}.tmp-${this.#tempSuffix()}`;
      try {
        await this.#fs.writeFile(tmp, data);
        return tmp;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        // Someone else's name (a file or a symlink): leave it alone and take another.
        if ((code !== 'EEXIST' && code !== 'ELOOP') || attempt >= TEMP_ATTEMPTS) throw err;
      }
    }
  }

  /** Closes the journal kept open between commits (a later commit opens it again). */
  close(): Promise<void> {
    return this.#journal.close();
  }

  async setAside(at: number): Promise<string> {
    const stamp = new Date(at).toISOString().replaceAll(':', '-');
    const aside = `${this.#path}.corrupt-${stamp}`;
    await this.#fs.rename(this.#path, aside);
    // The journal goes too: it follows the snapshot set aside, never a later one.
    await this.#journal.setAside(stamp);
    await this.#fs.syncDir(nodePath.dirname(this.#path));
    return aside;
  }
}
