// Pods' egress through a node-local range, in a table of its own per family, as upstream's egress
// plugins do: IPv6 pods' IPv4 (ENABLE_V4_EGRESS: 169.254.172.0/22 on v4if0, table
// `ip vpcnet_v4egress`, SNATed to the node's primary IPv4) and IPv4 pods' IPv6 (ENABLE_V6_EGRESS:
// fd00::ac:0/118 on v6if0, table `ip6 vpcnet_v6egress`, SNATed to the node's IPv6). The range is
// never seen outside the node. One SNAT rule for the range, not one per pod as upstream has: no
// per-pod nft state to create, remove or repair. And, as upstream's "Block Node Local Pod access"
// rule, new connections forwarded to the range are rejected: the addresses are for a pod's own
// egress, not a way in past what its real address allows. Applied with one `nft -f -` (atomic);
// the chains are flushed and refilled, so a changed source or port mode takes effect without a
// gap. Only the family's own table is touched.
import { isIPv6 } from 'node:net';
import { V4_EGRESS_CIDR } from '../../plan/ipv6-pod-plan.ts';
import { V6_EGRESS_CIDR } from '../../plan/v6-egress-plan.ts';
import type { EgressSnatConfig } from '../kernel.ts';
import { assertIpv4, snatPortFlag } from './snat.ts';

/** One family's egress table: nft's family and address keyword, and the range. */
export interface EgressTable {
  readonly family: 'ip' | 'ip6';
  readonly name: string;
  readonly cidr: string;
}

export const V4_EGRESS_TABLE: EgressTable = { family: 'ip', name: 'vpcnet_v4egress', cidr: V4_EGRESS_CIDR };
export const V6_EGRESS_TABLE: EgressTable = { family: 'ip6', name: 'vpcnet_v6egress', cidr: V6_EGRESS_CIDR };

function assertSource(t: EgressTable, ip: string): void {
  if (t.family === 'ip') assertIpv4(ip);
  else if (!isIPv6(ip)) throw new Error(`not an IPv6 address: ${JSON.stringify(ip)}`);
}

/** Idempotent: the table, its chains and their rules exist with this source and port mode. */
export function setupEgressScript(t: EgressTable, cfg: EgressSnatConfig): string {
  assertSource(t, cfg.snatSource);
  const table = `${t.family} ${t.name}`;
  const addr = t.family; // nft's address match keyword is the family's name: `ip saddr`, `ip6 saddr`
  return `${[
    `add table ${table}`,
    `add chain ${table} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${table} postrouting`,
    `add rule ${table} postrouting ${addr} saddr ${t.cidr} ${addr} daddr != ${t.cidr}` +
      ` snat to ${cfg.snatSource}${snatPortFlag(cfg.randomizeSnat ?? 'prng')}`,
    `add chain ${table} forward { type filter hook forward priority filter; policy accept; }`,
    `flush chain ${table} forward`,
    `add rule ${table} forward ${addr} daddr ${t.cidr} ct state new reject`,
  ].join('\n')}\n`;
}

/** Idempotent removal (nft 1.0.6 has no `destroy`: add, then delete, in one transaction). */
export function removeEgressScript(t: EgressTable): string {
  return `add table ${t.family} ${t.name}\ndelete table ${t.family} ${t.name}\n`;
}
