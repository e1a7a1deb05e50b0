// ADD's three questions about a CNI_NETNS path (does it exist, is it a network namespace, which
// one is it) answered from one look: an O_PATH descriptor, then its fstat and its /proc/self/fd
// link side by side. Each question asked on its own cost a chain of up to four round trips to
// libuv's thread pool (statfs, open, readlink, close), and in a burst of ADDs every round trip
// also waits its turn on the busy event loop: the checks were the largest of the agent's own
// phases (issue 9). The look concludes what the careful checks (pod-netns.ts) would: a file of
// nsfs (all of whose files share one device number, that of /proc/self/ns/net) is a network
// namespace unless its link names another kind; a bind mount (`ip netns add`, a runtime's
// /var/run/netns/X) links to its path and names no kind, which the careful checks accept too.
// Anything else takes the careful way, so every refusal keeps its exact words.
import { access, open, readlink, stat } from 'node:fs/promises';
import { netnsIdentity } from '../dataplane/netns-identity.ts';

/**
 * open(2)'s O_PATH on Linux, which Node's fs.constants leaves out: a descriptor that names the
 * file without opening it, so it has no side effect and never blocks (a FIFO, a device).
 */
const O_PATH = 0o10000000;

export interface NetnsInspection {
  readonly exists: boolean;
  /** What the path is when it is not a network namespace ("a regular file"…), else undefined. */
  readonly notNetns: string | undefined;
  /** dev:ino of the file behind the path (netns-identity.ts), undefined when it cannot be read. */
  readonly identity: string | undefined;
}

let nsfsDev: Promise<number> | undefined;

/** The device number of nsfs, read once. */
function nsfsDevice(): Promise<number> {
  nsfsDev ??= stat('/proc/self/ns/net').then((st) => st.dev);
  return nsfsDev;
}

/** Whether the path exists (for ADD: a namespace that is gone answers code 3). */
async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** Each question on its own, as before: for what the quick look cannot vouch for. */
async function carefully(
  path: string,
  describe: (path: string) => Promise<string | undefined>,
): Promise<NetnsInspection> {
  const [found, notNetns, identity] = await Promise.all([
    pathExists(path),
    describe(path),
    netnsIdentity(path),
  ]);
  return { exists: found, notNetns, identity };
}

export async function inspectNetns(
  path: string,
  describe: (path: string) => Promise<string | undefined>,
): Promise<NetnsInspection> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, O_PATH);
  } catch {
    return carefully(path, describe);
  }
  try {
    const [st, link, nsfs] = await Promise.all([fh.stat(), readlink(`/proc/self/fd/${fh.fd}`), nsfsDevice()]);
    const kind = /^([a-z_]+):\[\d+\]$/.exec(link)?.[1];
    if (st.dev !== nsfs || (kind !== undefined && kind !== 'net')) return carefully(path, describe);
    return { exists: true, notNetns: undefined, identity: `${st.dev}:${st.ino}` };
  } catch {
    return carefully(path, describe);
  } finally {
    // Not awaited: the answer does not depend on it, and it would be one more round trip.
    fh.close().catch(() => {});
  }
}
