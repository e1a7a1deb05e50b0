// vpcnet's nftables table: pod addresses in `snat_pods` are SNATed to the node's primary IP when
// they leave the VPC. Scripts are applied with one `nft -f -` (atomic). Only table `ip vpcnet` is
// ever touched: other tables on the node belong to other software.
import { isIPv4 } from 'node:net';
import { parseIpv4 } from '../../infra/ipv4.ts';
import type { NodeNetworkConfig } from '../kernel.ts';

export const SNAT_TABLE = 'vpcnet';
export const SNAT_SET = 'snat_pods';
export const VPC_CIDR_SET = 'vpc_cidrs';
export const SNAT_CHAIN = 'postrouting';

/** Values go into an nft script: accept only plain IPv4 addresses/CIDRs, nothing that could be syntax. */
export function assertIpv4(ip: string): void {
  if (!isIPv4(ip)) throw new Error(`not an IPv4 address: ${JSON.stringify(ip)}`);
}

export function assertIpv4Cidr(cidr: string): void {
  const [ip, len, extra] = cidr.split('/');
  const n = Number(len);
  if (ip === undefined || extra !== undefined || !isIPv4(ip) || !/^\d{1,2}$/.test(len ?? '') || n > 32) {
    throw new Error(`not an IPv4 CIDR: ${JSON.stringify(cidr)}`);
  }
}

/**
 * Idempotent node setup. The CIDR set is refilled and the chain's one rule replaced in the same
 * transaction, so a changed SNAT source or VPC CIDR list takes effect without a gap, while the
 * pods' elements in `snat_pods` are kept.
 */
export function setupNodeScript(cfg: NodeNetworkConfig): string {
  assertIpv4(cfg.snatSource);
  for (const c of cfg.vpcCidrs) assertIpv4Cidr(c);
  const t = `ip ${SNAT_TABLE}`;
  const lines = [
    `add table ${t}`,
    `add set ${t} ${SNAT_SET} { type ipv4_addr; }`,
    // auto-merge: overlapping VPC CIDRs (a secondary CIDR inside a larger one) are not an error.
    `add set ${t} ${VPC_CIDR_SET} { type ipv4_addr; flags interval; auto-merge; }`,
    `flush set ${t} ${VPC_CIDR_SET}`,
    ...(cfg.vpcCidrs.length > 0 ? [`add element ${t} ${VPC_CIDR_SET} { ${cfg.vpcCidrs.join(', ')} }`] : []),
    `add chain ${t} ${SNAT_CHAIN} { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} ${SNAT_CHAIN}`,
    `add rule ${t} ${SNAT_CHAIN} ip saddr @${SNAT_SET} ip daddr != @${VPC_CIDR_SET} snat to ${cfg.snatSource}`,
  ];
  return `${lines.join('\n')}\n`;
}

export function addSnatScript(ips: readonly string[]): string {
  for (const ip of ips) assertIpv4(ip);
  return `add element ip ${SNAT_TABLE} ${SNAT_SET} { ${ips.join(', ')} }\n`;
}

/**
 * Removes elements whether or not they are present: nft 1.0.6 has no `destroy`, and `delete` of a
 * missing element aborts the whole transaction, so each element is added first (a no-op if present)
 * and then deleted, in one transaction.
 */
export function removeSnatScript(ips: readonly string[]): string {
  for (const ip of ips) assertIpv4(ip);
  const set = `ip ${SNAT_TABLE} ${SNAT_SET} { ${ips.join(', ')} }`;
  return `add element ${set}\ndelete element ${set}\n`;
}

export function listSnatSetArgv(): string[] {
  return ['nft', '-j', 'list', 'set', 'ip', SNAT_TABLE, SNAT_SET];
}

/** The set's elements in address order, however the kernel or nft listed them (a set has no order). */
export function inAddressOrder(ips: readonly string[]): string[] {
  return [...ips].sort((a, b) => parseIpv4(a) - parseIpv4(b));
}

/** Elements of `snat_pods` from `nft -j list set` output; undefined if the output has no such set. */
export function parseSnatElements(stdout: string): string[] | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  const items = (doc as { nftables?: unknown }).nftables;
  if (!Array.isArray(items)) return undefined;
  for (const item of items) {
    const set = (item as { set?: { name?: unknown; elem?: unknown } } | null)?.set;
    if (set?.name !== SNAT_SET) continue;
    return Array.isArray(set.elem)
      ? inAddressOrder(set.elem.filter((e): e is string => typeof e === 'string' && isIPv4(e)))
      : [];
  }
  return undefined;
}
