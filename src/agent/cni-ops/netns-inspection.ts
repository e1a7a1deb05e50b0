// ADD's three questions about a CNI_NETNS path (does it exist, is it a network namespace, which
// one is it) answered from one look: an O_PATH descriptor, its fstat and its /proc/self/fd link.
// The look concludes what the careful checks (pod-netns.ts) would: a file of nsfs (all of whose
// files share one device number, that of /proc/self/ns/net) is a network namespace unless its link
// names another kind; a bind mount (`ip netns add`, a runtime's /var/run/netns/X) links to its path
// and names no kind, which the careful checks accept too. Anything else takes the careful way, so
// every refusal keeps its exact words.
//
// The look is made on the event loop's own thread (four system calls, a few microseconds): an
// O_PATH open does no I/O and never blocks, and fstat and readlink of the descriptor are answered
// from the kernel's memory (procfs, nsfs). Through libuv's thread pool the same look cost three
// round trips, and in a burst of ADDs each round trip waits behind the burst's other work, many
// times the look itself.

import { closeSync, fstatSync, openSync, readlinkSync, statSync } from 'node:fs';
import { netnsIdentity } from '../../dataplane/netns-identity.ts';
import { pathExists } from '../../infra/path-exists.ts';

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

let nsfsDev: number | undefined;

/** The device number of nsfs, read once. */
function nsfsDevice(): number {
  nsfsDev ??= statSync('/proc/self/ns/net').dev;
  return nsfsDev;
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
  let fd: number;
  try {
    fd = openSync(path, O_PATH);
  } catch {
    return carefully(path, describe);
  }
  let quick: NetnsInspection | undefined;
  try {
    const st = fstatSync(fd);
    const kind = /^([a-z_]+):\[\d+\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
    if (st.dev === nsfsDevice() && (kind === undefined || kind === 'net'))
      quick = { exists: true, notNetns: undefined, identity: `${st.dev}:${st.ino}` };
  } catch {
    // The careful way below says what went wrong.
  } finally {
    closeSync(fd);
  }
  return quick ?? carefully(path, describe);
}
