// The node's side of IPv6 mode (ENABLE_IPv6), at agent start: IPv6 forwarding must be on in the
// node's namespace (the node routes every pod's /128 between the VPC and the host veths), and with
// ENABLE_V4_EGRESS the SNAT of the pods' IPv4 egress range exists; without it, it does not. The
// agent changes no sysctl (the node's owner decides, `vpcnetctl install --ipv6-forwarding` sets it):
// it refuses to start instead, naming the sysctl.
import type { Kernel, V4EgressConfig } from './kernel.ts';

export const IPV6_FORWARDING_SYSCTL = 'net.ipv6.conf.all.forwarding';

export interface Ipv6NodeConfig {
  /** IPv4 egress of IPv6 pods; undefined: none (ENABLE_V4_EGRESS=false). */
  readonly v4Egress: V4EgressConfig | undefined;
}

/** Refused at start: the node is not set up for IPv6 pods. */
export class Ipv6NodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Ipv6NodeError';
  }
}

/**
 * Refuses (Ipv6NodeError) a node that does not forward IPv6: `setting` needs it, and `consequence`
 * says what would break.
 */
export async function requireIpv6Forwarding(
  kernel: Pick<Kernel, 'readNodeSysctl'>,
  setting: string,
  consequence: string,
): Promise<void> {
  const forwarding = await kernel.readNodeSysctl(IPV6_FORWARDING_SYSCTL);
  if (forwarding !== '1') {
    throw new Ipv6NodeError(
      `${setting} needs ${IPV6_FORWARDING_SYSCTL}=1 in the node's network namespace, ` +
        `it is ${forwarding}: ${consequence}. The agent changes no sysctl: set it ` +
        `(vpcnetctl install --ipv6-forwarding, or sysctl -w ${IPV6_FORWARDING_SYSCTL}=1) and restart`,
    );
  }
}

export async function setupIpv6Node(kernel: Kernel, cfg: Ipv6NodeConfig): Promise<void> {
  await requireIpv6Forwarding(kernel, 'ENABLE_IPv6=true', 'IPv6 pods would be unreachable');
  await kernel.setupV4Egress(cfg.v4Egress);
}
