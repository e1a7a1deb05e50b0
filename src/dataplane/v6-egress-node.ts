// The node's side of IPv6 egress for IPv4 pods (ENABLE_V6_EGRESS), at agent start: the SNAT of the
// pods' fd00::ac:0/118 to the node's IPv6 address (ip-cli/egress-snat.ts), with IPv6 forwarding on
// (checked, never set: `vpcnetctl install` sets it with ENABLE_V6_EGRESS=true). As upstream, a node
// whose primary ENI has no IPv6 address serves its pods without IPv6 egress, saying so; a node
// that does not forward IPv6 is refused, since every pod's egress would be black-holed.
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import { requireIpv6Forwarding } from './ipv6-node.ts';
import type { Kernel, RandomizeSnat } from './kernel.ts';

export interface V6EgressNodeConfig {
  readonly enabled: boolean;
  /** The node's IPv6 address (its primary ENI's, from instance metadata); undefined: none. */
  readonly nodeIpv6: string | undefined;
  readonly randomizeSnat: RandomizeSnat;
}

/** Whether pods get IPv6 egress on this node. */
export async function setupV6EgressNode(
  kernel: Pick<Kernel, 'readNodeSysctl' | 'setupV6Egress'>,
  cfg: V6EgressNodeConfig,
  log: Pick<Logger, 'warn' | 'debug'>,
): Promise<boolean> {
  if (cfg.enabled && cfg.nodeIpv6 === undefined) {
    log.warn(
      "ENABLE_V6_EGRESS=true but the node's primary ENI has no IPv6 address: pods get no IPv6 egress on this node (as upstream); give the node's subnet an IPv6 CIDR block and the ENI an IPv6 address",
    );
  }
  if (!cfg.enabled || cfg.nodeIpv6 === undefined) {
    // What an earlier start with it on left goes; where nftables cannot even be asked (a kernel
    // without nf_tables, which external SNAT allows), there is nothing to remove.
    await kernel
      .setupV6Egress(undefined)
      .catch((err: unknown) => log.debug('IPv6 egress table not removed', { error: errorText(err) }));
    return false;
  }
  await requireIpv6Forwarding(
    kernel,
    'ENABLE_V6_EGRESS=true',
    "pods' IPv6 egress would be dropped at the node",
  );
  await kernel.setupV6Egress({ snatSource: cfg.nodeIpv6, randomizeSnat: cfg.randomizeSnat });
  return true;
}
