// Whether a CNI_NETNS path names a network namespace at all. The agent enters whatever path it is
// given to build a pod's network there; a regular file, a directory or another kind of namespace
// (/proc/self/ns/mnt) is refused before anything is touched. A network namespace is a file of the
// nsfs file system (statfs f_type NSFS_MAGIC), and an open descriptor of it reads `net:[inode]`
// in /proc/self/fd, which tells it from the other namespace kinds. Paths are followed as the
// runtime means them: /var/run/netns/X (bind mounts of `ip netns add`), /proc/PID/ns/net.
import { lstat, open, readlink, stat, statfs } from 'node:fs/promises';

/** statfs(2) f_type of nsfs (linux/magic.h NSFS_MAGIC). */
export const NSFS_MAGIC = 0x6e736673;

function describeFile(st: Awaited<ReturnType<typeof stat>>): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a namespace file';
}

/** The namespace kind behind an nsfs path ("net", "mnt", …), undefined if /proc cannot say. */
async function namespaceKind(path: string): Promise<string | undefined> {
  // Only nsfs files get here: opening one has no side effect and never blocks.
  const fh = await open(path, 'r');
  try {
    const target = await readlink(`/proc/self/fd/${fh.fd}`);
    return /^([a-z_]+):\[\d+\]$/.exec(target)?.[1];
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}

/**
 * What `path` is when it is not a network namespace ("a regular file", "a mnt namespace"…), or
 * undefined when it is one. A path that does not exist is the caller's to report (code 3).
 */
export async function notANetworkNamespace(path: string): Promise<string | undefined> {
  let type: number;
  try {
    type = (await statfs(path)).type;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      // A dangling symlink: not a namespace either.
      return (await lstat(path).catch(() => undefined))?.isSymbolicLink()
        ? 'a dangling symbolic link'
        : undefined;
    }
    return `unreadable (${code ?? String(err)})`;
  }
  if (type !== NSFS_MAGIC) return describeFile(await stat(path));
  const kind = await namespaceKind(path);
  // nsfs, but /proc does not say which kind: accept it rather than refuse every pod.
  if (kind === undefined || kind === 'net') return undefined;
  return `a ${kind} namespace`;
}
