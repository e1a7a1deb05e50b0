// The DEL spool dir and its entries, read without trusting what the directory holds: whoever can write
// there may leave a FIFO (opening it would block the agent), a symlink (to a file the plugin never
// wrote, or to nothing), a directory or a huge file. Only a regular file of at most
// MAX_REQUEST_BYTES (what the plugin spools is a request body) is read; it is opened without
// following links and without blocking, and judged by fstat of the open descriptor, so a name
// swapped between a check and the open cannot slip through.
import { constants, readdirSync, type Stats } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type ForwardedRequest, MAX_REQUEST_BYTES } from '../cni/wire.ts';
import { parseSpooled, SPOOL_FILE_SUFFIX, SPOOL_TEMP_PREFIX } from './format.ts';

export type SpoolEntry =
  | { readonly kind: 'request'; readonly request: ForwardedRequest }
  /** A regular file of a sane size whose content is not a forwarded request. */
  | { readonly kind: 'garbled' }
  /** Not something the plugin writes: set it aside unread (`why` names what it is). */
  | { readonly kind: 'odd'; readonly why: string }
  /** Gone before it could be opened (applied meanwhile by an ADD of its key). */
  | { readonly kind: 'gone' };

// (Node adds O_CLOEXEC itself.)
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Why opening failed, when the failure says what the entry is (never worth a retry). */
function oddOnOpen(code: string | undefined): string | undefined {
  switch (code) {
    case 'ELOOP':
      return 'a symbolic link'; // O_NOFOLLOW: whether it points anywhere or not
    case 'ENXIO':
      return 'a socket';
    case 'ENODEV':
    case 'ENOTSUP':
    case 'EOPNOTSUPP':
      return 'a device';
    default:
      return undefined;
  }
}

/**
 * Reads the entry at `path`. Throws only on errors that may pass (EMFILE, EIO…): the entry is then
 * kept for a later drain.
 */
export async function readSpoolEntry(path: string): Promise<SpoolEntry> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'gone' };
    const why = oddOnOpen(code);
    if (why !== undefined) return { kind: 'odd', why };
    throw err;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return { kind: 'odd', why: fileKind(st) };
    if (st.size > MAX_REQUEST_BYTES) {
      return { kind: 'odd', why: `${st.size} bytes, over the ${MAX_REQUEST_BYTES} a request may have` };
    }
    // Read one byte past the limit: a file that grew since fstat is caught as well.
    const buf = Buffer.alloc(MAX_REQUEST_BYTES + 1);
    let len = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
      if (bytesRead === 0) break;
      len += bytesRead;
      if (len > MAX_REQUEST_BYTES) {
        return { kind: 'odd', why: `over the ${MAX_REQUEST_BYTES} bytes a request may have` };
      }
    }
    const request = parseSpooled(buf.subarray(0, len).toString('utf8'));
    return request === undefined ? { kind: 'garbled' } : { kind: 'request', request };
  } finally {
    await fh.close();
  }
}

/** Renames the entry (not what a link points to) so that no drain reads it again; returns the new path. */
export async function setAside(path: string, suffix: string): Promise<string> {
  const to = `${path}${suffix}`;
  await rename(path, to);
  return to;
}

/** fsync of a directory, so that a rename or unlink in it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The names of the spool's live entries, in arrival order; none when the dir does not exist.
 * Listed on the calling thread: every ADD looks (spool-first.ts), the directory is local and
 * almost always empty, and a round trip through libuv's thread pool cost more than the listing
 * (in a burst of ADDs it waits behind the burst's other work).
 */
export function spoolEntryNames(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith(SPOOL_FILE_SUFFIX) && !n.startsWith(SPOOL_TEMP_PREFIX))
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Removes an applied entry durably (an entry back after a crash would be applied again). */
export async function consumeEntry(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await syncDir(dirname(path));
}
