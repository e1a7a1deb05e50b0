// `vpcnetctl install --ipv6-forwarding` (or ENABLE_IPv6=true, as upstream's init container reads
// it): IPv6 mode needs net.ipv6.conf.all.forwarding=1 in the node's namespace, and the agent itself
// changes no sysctl (it refuses to start without it). The init step runs in the node's namespace
// (host network); writing /proc/sys needs a privileged container.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const IPV6_FORWARDING_FILE = 'net/ipv6/conf/all/forwarding';

/** Sets net.ipv6.conf.all.forwarding=1 under `procSys` (/proc/sys) and reads it back. */
export async function enableIpv6Forwarding(procSys: string): Promise<void> {
  const file = join(procSys, IPV6_FORWARDING_FILE);
  try {
    await writeFile(file, '1\n');
    const now = (await readFile(file, 'utf8')).trim();
    if (now !== '1') throw new Error(`it reads ${now} after writing 1`);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot set net.ipv6.conf.all.forwarding=1 (${file}): ${why}; the install container must be ` +
        'privileged and in the node network namespace to set it',
    );
  }
}
