// An in-memory LedgerFsDeps for tests that models what survives a crash: file contents reach the
// disk only when the file is fsynced, and a name (a create or a rename) only when its directory is
// fsynced. crash() throws away everything that had not reached the disk, as a power cut would, and
// may keep any prefix of what was written but not synced (a torn write), the rest cut off or read
// back as zeros (delayed allocation); the machine then boots again (bootId). Failure injection at
// each step, and a halt after any number of steps (the machine stops in the middle of a commit).
import type { AppendHandle, LedgerFsDeps } from '../storage/node-fs.ts';

export type LedgerFsStep = 'open' | 'write' | 'append' | 'fsync' | 'datasync' | 'rename' | 'syncDir';

interface Inode {
  data: string;
  /** The contents on disk; undefined until the first fsync (a crash leaves the file empty). */
  synced: string | undefined;
}

/** How many of a file's unsynced characters a crash keeps (0 when absent: none). */
export type TornTail = (path: string, unsynced: number) => number;

/** What a crash makes of the unsynced characters it does not keep: gone, or zeros in their place. */
export type LostWrites = 'cut' | 'zeros';

export class MemoryLedgerFs implements LedgerFsDeps {
  readonly calls: string[] = [];
  /** Steps that fail once each, in order of arrival; a test pushes the steps it wants to break. */
  readonly failNext: LedgerFsStep[] = [];
  /** Bytes handed to writeFile and appendFile so far. */
  bytesWritten = 0;
  /** Names as the running system sees them. */
  readonly #names = new Map<string, Inode>();
  /** Names as the disk has them (made durable by syncDir). */
  #durableNames = new Map<string, Inode>();
  /** Calls left before the machine stops (undefined: it does not). */
  #callsBeforeHalt: number | undefined;
  /** Boots so far: crash() is followed by a new one. */
  #boots = 1;

  /** What each visible file holds (for assertions and for planting files). */
  readonly files = {
    get: (path: string): string | undefined => this.#names.get(path)?.data,
    has: (path: string): boolean => this.#names.has(path),
    /** Plants a file as if it had been on disk for long (durable). */
    set: (path: string, data: string): void => {
      const inode = { data, synced: data };
      this.#names.set(path, inode);
      this.#durableNames.set(path, inode);
    },
  };

  /** After `calls` more calls the machine stops: that call and every later one fails, doing nothing. */
  haltAfter(calls: number): void {
    this.#callsBeforeHalt = calls;
  }

  /**
   * The machine stops and boots again: only what reached the disk is there afterwards, plus torn
   * unsynced tails, the rest of each either cut off or (`lost: 'zeros'`) zeros.
   */
  crash(tornTail: TornTail = () => 0, lost: LostWrites = 'cut'): void {
    this.#callsBeforeHalt = undefined;
    this.#boots++;
    this.#names.clear();
    for (const [name, inode] of this.#durableNames) {
      inode.data = this.#tear(name, inode, tornTail, lost);
      inode.synced = inode.data;
      this.#names.set(name, inode);
    }
  }

  async bootId(): Promise<string> {
    return `boot-${this.#boots}`;
  }

  /** What of an inode's unsynced appended data a crash (or failed sync) leaves. */
  #tear(path: string, inode: Inode, tornTail: TornTail, lost: LostWrites = 'cut'): string {
    const base = inode.synced ?? '';
    if (!inode.data.startsWith(base)) return base;
    const unsynced = inode.data.slice(base.length);
    const keep = Math.max(0, Math.min(unsynced.length, Math.floor(tornTail(path, unsynced.length))));
    const zeros = lost === 'zeros' ? '\0'.repeat(unsynced.length - keep) : '';
    return base + unsynced.slice(0, keep) + zeros;
  }

  #step(call: string, step: LedgerFsStep | undefined, path: string): void {
    if (this.#callsBeforeHalt !== undefined) {
      if (this.#callsBeforeHalt <= 0)
        throw Object.assign(new Error(`machine stopped: ${call}`), { code: 'EIO' });
      this.#callsBeforeHalt--;
    }
    this.calls.push(call);
    const i = step === undefined ? -1 : this.failNext.indexOf(step);
    if (i >= 0) {
      this.failNext.splice(i, 1);
      throw Object.assign(new Error(`injected ${step} failure on ${path}`), { code: 'EIO' });
    }
  }

  async readFile(path: string): Promise<string | undefined> {
    this.#step(`read ${path}`, undefined, path);
    return this.#names.get(path)?.data;
  }

  async writeFile(path: string, data: string): Promise<void> {
    this.#step(`write ${path}`, 'write', path);
    // Exclusive create, as the real one: an existing name is refused, never written through.
    if (this.#names.has(path)) throw Object.assign(new Error(`EEXIST: ${path}`), { code: 'EEXIST' });
    this.#names.set(path, { data, synced: undefined });
    this.bytesWritten += Buffer.byteLength(data);
  }

  /** Handles that are open (opened and not closed), for assertions. */
  openHandles = 0;

  /** A handle on the inode `path` names now: like a descriptor, it stays with that inode. */
  async openAppend(path: string): Promise<AppendHandle> {
    this.#step(`open ${path}`, 'open', path);
    const inode = this.#names.get(path);
    if (!inode) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    this.openHandles++;
    let open = true;
    const usable = (call: string) => {
      if (!open)
        throw Object.assign(new Error(`EBADF: ${call} on a closed handle of ${path}`), { code: 'EBADF' });
    };
    return {
      append: async (data) => {
        usable('append');
        this.#step(`append ${path}`, 'append', path);
        inode.data += data;
        this.bytesWritten += Buffer.byteLength(data);
      },
      syncData: async () => {
        usable('datasync');
        this.#syncInode(path, inode, `datasync ${path}`, 'datasync');
      },
      close: async () => {
        usable('close');
        open = false;
        this.openHandles--;
      },
    };
  }

  async syncFile(path: string): Promise<void> {
    this.#syncInode(path, this.#names.get(path), `fsync ${path}`, 'fsync');
  }

  #syncInode(path: string, inode: Inode | undefined, call: string, step: LedgerFsStep): void {
    try {
      this.#step(call, step, path);
    } catch (err) {
      // A failed sync leaves the contents on disk undefined; model the worst case: the unsynced
      // part torn in half (a new file's whole contents).
      if (inode) inode.data = this.#tear(path, inode, (_, n) => n / 2);
      throw err;
    }
    if (!inode) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    inode.synced = inode.data;
  }

  async rename(from: string, to: string): Promise<void> {
    this.#step(`rename ${from} ${to}`, 'rename', from);
    const inode = this.#names.get(from);
    if (inode === undefined) throw Object.assign(new Error(`ENOENT: ${from}`), { code: 'ENOENT' });
    this.#names.set(to, inode);
    this.#names.delete(from);
  }

  async syncDir(dir: string): Promise<void> {
    this.#step(`syncDir ${dir}`, 'syncDir', dir);
    this.#durableNames = new Map(this.#names);
  }

  async listDir(dir: string): Promise<string[]> {
    this.#step(`list ${dir}`, undefined, dir);
    const prefix = `${dir}/`;
    return [...this.#names.keys()]
      .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/'))
      .map((p) => p.slice(prefix.length));
  }

  async removeFile(path: string): Promise<void> {
    this.#step(`remove ${path}`, undefined, path);
    this.#names.delete(path);
  }
}
