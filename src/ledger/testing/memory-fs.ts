// An in-memory LedgerFsDeps for tests that models what survives a crash: file contents reach the
// disk only when the file is fsynced, and a name (a create or a rename) only when its directory is
// fsynced. crash() throws away everything that had not reached the disk, as a power cut would.
// Failure injection at each step of an atomic save.
import type { LedgerFsDeps } from '../node-fs.ts';

export type LedgerFsStep = 'write' | 'fsync' | 'rename' | 'syncDir';

interface Inode {
  data: string;
  /** The contents on disk; undefined until the first fsync (a crash leaves the file empty). */
  synced: string | undefined;
}

export class MemoryLedgerFs implements LedgerFsDeps {
  readonly calls: string[] = [];
  /** Steps that fail once each, in order of arrival; a test pushes the steps it wants to break. */
  readonly failNext: LedgerFsStep[] = [];
  /** Names as the running system sees them. */
  readonly #names = new Map<string, Inode>();
  /** Names as the disk has them (made durable by syncDir). */
  #durableNames = new Map<string, Inode>();

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

  /** The machine stops: only what reached the disk is there afterwards. */
  crash(): void {
    this.#names.clear();
    for (const [name, inode] of this.#durableNames) {
      inode.data = inode.synced ?? '';
      this.#names.set(name, inode);
    }
  }

  #maybeFail(step: LedgerFsStep, path: string): void {
    const i = this.failNext.indexOf(step);
    if (i >= 0) {
      this.failNext.splice(i, 1);
      throw Object.assign(new Error(`injected ${step} failure on ${path}`), { code: 'EIO' });
    }
  }

  async readFile(path: string): Promise<string | undefined> {
    this.calls.push(`read ${path}`);
    return this.#names.get(path)?.data;
  }

  async writeFile(path: string, data: string): Promise<void> {
    this.calls.push(`write ${path}`);
    this.#maybeFail('write', path);
    // Exclusive create, as the real one: an existing name is refused, never written through.
    if (this.#names.has(path)) throw Object.assign(new Error(`EEXIST: ${path}`), { code: 'EEXIST' });
    this.#names.set(path, { data, synced: undefined });
  }

  async syncFile(path: string): Promise<void> {
    this.calls.push(`fsync ${path}`);
    const inode = this.#names.get(path);
    if (!inode) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    // An fsync failure leaves the contents on disk undefined; model the worst case: torn.
    try {
      this.#maybeFail('fsync', path);
    } catch (err) {
      inode.data = inode.data.slice(0, Math.floor(inode.data.length / 2));
      throw err;
    }
    inode.synced = inode.data;
  }

  async rename(from: string, to: string): Promise<void> {
    this.calls.push(`rename ${from} ${to}`);
    this.#maybeFail('rename', from);
    const inode = this.#names.get(from);
    if (inode === undefined) throw Object.assign(new Error(`ENOENT: ${from}`), { code: 'ENOENT' });
    this.#names.set(to, inode);
    this.#names.delete(from);
  }

  async syncDir(dir: string): Promise<void> {
    this.calls.push(`syncDir ${dir}`);
    this.#maybeFail('syncDir', dir);
    this.#durableNames = new Map(this.#names);
  }

  async listDir(dir: string): Promise<string[]> {
    const prefix = `${dir}/`;
    return [...this.#names.keys()]
      .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/'))
      .map((p) => p.slice(prefix.length));
  }

  async removeFile(path: string): Promise<void> {
    this.calls.push(`remove ${path}`);
    this.#names.delete(path);
  }
}
