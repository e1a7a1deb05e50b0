// DISABLE_TCP_EARLY_DEMUX (upstream's name): with early demux on, the kernel hands an incoming TCP
// segment to a socket found before routing, so the kubelet's probe of a pod with its own security
// groups in strict mode (whose replies the node routes through the branch ENI's rules) can be
// dropped. Upstream's privileged init container turns it off; here `vpcnetctl install` does, and the
// agent, which changes no sysctl, checks at start and says what to do when it is still on.
import type { Kernel } from './kernel.ts';

export const TCP_EARLY_DEMUX_SYSCTL = 'net.ipv4.tcp_early_demux';

/** The problem with the node's early demux when it was asked off, or undefined (off, or no such sysctl). */
export async function tcpEarlyDemuxProblem(
  kernel: Pick<Kernel, 'readNodeSysctl'>,
  disable: boolean,
): Promise<string | undefined> {
  if (!disable) return undefined;
  let value: string;
  try {
    value = await kernel.readNodeSysctl(TCP_EARLY_DEMUX_SYSCTL);
  } catch {
    return undefined; // a kernel without it (upstream's init skips it too): nothing to turn off
  }
  if (value === '0') return undefined;
  return (
    `DISABLE_TCP_EARLY_DEMUX=true but ${TCP_EARLY_DEMUX_SYSCTL} is ${value} in the node's network namespace: ` +
    'kubelet probes of pods with their own security groups in strict mode may fail. The agent changes no ' +
    `sysctl: run the install step privileged with DISABLE_TCP_EARLY_DEMUX=true (vpcnetctl install --disable-tcp-early-demux), or sysctl -w ${TCP_EARLY_DEMUX_SYSCTL}=0`
  );
}
