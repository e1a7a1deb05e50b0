// IPv4 egress of IPv6 pods (ENABLE_V4_EGRESS): one static nftables rule in a table of its own that
// SNATs the pods' node-local egress range (169.254.172.0/22, never seen outside the node) to the
// node's primary IPv4, as upstream's egress plugin does with one iptables rule per pod. One rule
// for the range, not per pod: no per-pod nft state to create, remove or repair. Applied with one
// `nft -f -` (atomic); the chain is flushed and refilled, so a changed source or port mode takes
// effect without a gap. Only table `ip vpcnet_v4egress` is touched.
import { V4_EGRESS_CIDR } from '../../plan/ipv6-pod-plan.ts';
import type { V4EgressConfig } from '../kernel.ts';
import { assertIpv4, snatPortFlag } from './snat.ts';

export const V4_EGRESS_TABLE = 'vpcnet_v4egress';
const CHAIN = 'postrouting';

/** Idempotent: the table, chain and its one rule exist with this source and port mode. */
export function setupV4EgressScript(cfg: V4EgressConfig): string {
  assertIpv4(cfg.snatSource);
  const t = `ip ${V4_EGRESS_TABLE}`;
  return `${[
    `add table ${t}`,
    `add chain ${t} ${CHAIN} { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} ${CHAIN}`,
    `add rule ${t} ${CHAIN} ip saddr ${V4_EGRESS_CIDR} ip daddr != ${V4_EGRESS_CIDR}` +
      ` snat to ${cfg.snatSource}${snatPortFlag(cfg.randomizeSnat ?? 'prng')}`,
  ].join('\n')}\n`;
}

/** Idempotent removal (nft 1.0.6 has no `destroy`: add, then delete, in one transaction). */
export function removeV4EgressScript(): string {
  return `add table ip ${V4_EGRESS_TABLE}\ndelete table ip ${V4_EGRESS_TABLE}\n`;
}
