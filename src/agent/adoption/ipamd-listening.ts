// Whether aws-node's ipamd runs in this network namespace: it serves the aws-cni plugin on
// 127.0.0.1:50051 (gRPC). Two agents must never manage one node's ENIs and addresses, so adoption
// refuses to start while ipamd listens. Read from /proc/net/tcp (this namespace's sockets): no
// connection is made to anything.
import { readFile } from 'node:fs/promises';

export const IPAMD_PORT = 50051;

/** TCP state LISTEN in /proc/net/tcp. */
const LISTEN = '0A';

/** Whether `procNetTcp` (the text of /proc/net/tcp) lists a listener on 127.0.0.1:port. */
export function listensOnLoopback(procNetTcp: string, port: number): boolean {
  // local_address is "0100007F:C383" for 127.0.0.1:50051 (the address in host byte order, hex).
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return procNetTcp
    .split('\n')
    .slice(1)
    .some((line) => {
      const f = line.trim().split(/\s+/);
      return f[1] === local && f[3] === LISTEN;
    });
}

export async function ipamdListening(procNetTcpPath = '/proc/net/tcp'): Promise<boolean> {
  try {
    return listensOnLoopback(await readFile(procNetTcpPath, 'utf8'), IPAMD_PORT);
  } catch {
    // No /proc/net/tcp (no IPv4 in this namespace): nothing listens there.
    return false;
  }
}
