// The node sysctls `vpcnetctl install` sets, as upstream's init container does, because the agent
// itself changes none (its /proc/sys is read-only): net.ipv6.conf.all.forwarding=1 for IPv6 pods
// and IPv6 egress (--ipv6-forwarding, ENABLE_IPv6=true, ENABLE_V6_EGRESS=true), and
// net.ipv4.tcp_early_demux=0 (--disable-tcp-early-demux, DISABLE_TCP_EARLY_DEMUX=true). The init
// step runs in the node's namespace (host network); writing /proc/sys needs a privileged container.
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const IPV6_FORWARDING = 'net.ipv6.conf.all.forwarding';
export const TCP_EARLY_DEMUX = 'net.ipv4.tcp_early_demux';

function fileOf(procSys: string, name: string): string {
  return join(procSys, ...name.split('.'));
}

/** Sets `name` (dotted, "net.ipv6.conf.all.forwarding") to `value` under `procSys` and reads it back. */
export async function setNodeSysctl(procSys: string, name: string, value: string): Promise<void> {
  const file = fileOf(procSys, name);
  try {
    await writeFile(file, `${value}\n`);
    const now = (await readFile(file, 'utf8')).trim();
    if (now !== value) throw new Error(`it reads ${now} after writing ${value}`);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `cannot set ${name}=${value} (${file}): ${why}; the install container must be ` +
        'privileged and in the node network namespace to set it',
    );
  }
}

/**
 * TCP early demux off, where the kernel has the sysctl (upstream's init container checks the same:
 * older kernels lack it). Whether it was there to set.
 */
export async function disableTcpEarlyDemux(procSys: string): Promise<boolean> {
  const present = await access(fileOf(procSys, TCP_EARLY_DEMUX)).then(
    () => true,
    () => false,
  );
  if (present) await setNodeSysctl(procSys, TCP_EARLY_DEMUX, '0');
  return present;
}
