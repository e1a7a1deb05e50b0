// vpcnet's nftables table: pod addresses in `snat_pods` are SNATed to the node's primary IP when
// they leave the VPC. Scripts are applied with one `nft -f -` (atomic). Only table `ip vpcnet` is
// ever touched: other tables on the node belong to other software.
import { isIPv4 } from 'node:net';
import { parseIpv4 } from '../../infra/ipv4.ts';
import type { NodeNetworkConfig, RandomizeSnat } from '../kernel.ts';

export const SNAT_TABLE = 'vpcnet';
export const SNAT_SET = 'snat_pods';
export const VPC_CIDR_SET = 'vpc_cidrs';
export const EXCLUDE_CIDR_SET = 'snat_exclude';
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
 * The nat statement's port flags for upstream's AWS_VPC_K8S_CNI_RANDOMIZESNAT. Upstream adds
 * iptables' `--random-fully` (prng) or `--random` (hashrandom) to its SNAT rule; nftables' `snat`
 * statement has the same kernel flags under the names `fully-random` and `random`.
 */
export function snatPortFlag(mode: RandomizeSnat): string {
  switch (mode) {
    case 'prng':
      return ' fully-random';
    case 'hashrandom':
      return ' random';
    case 'none':
      return '';
  }
}

/** An interval set refilled in the script's transaction: a reader never sees it half-filled. */
function refillSet(t: string, set: string, cidrs: readonly string[]): string[] {
  return [
    // auto-merge: overlapping CIDRs (a secondary CIDR inside a larger one) are not an error.
    `add set ${t} ${set} { type ipv4_addr; flags interval; auto-merge; }`,
    `flush set ${t} ${set}`,
    ...(cidrs.length > 0 ? [`add element ${t} ${set} { ${cidrs.join(', ')} }`] : []),
  ];
}

/**
 * Idempotent node setup. The CIDR sets are refilled and the chain's one rule replaced in the same
 * transaction, so a changed SNAT source, VPC CIDR list (the refresh loop re-runs this) or port
 * mode takes effect without a gap, while the pods' elements in `snat_pods` are kept. Upstream
 * skips SNAT for the VPC CIDRs and AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS with one iptables rule per
 * CIDR in its own chain; here each list is a set the rule matches with `!=`.
 */
export function setupNodeScript(cfg: NodeNetworkConfig): string {
  assertIpv4(cfg.snatSource);
  const exclude = cfg.excludeCidrs ?? [];
  for (const c of [...cfg.vpcCidrs, ...exclude]) assertIpv4Cidr(c);
  const t = `ip ${SNAT_TABLE}`;
  const lines = [
    `add table ${t}`,
    `add set ${t} ${SNAT_SET} { type ipv4_addr; }`,
    ...refillSet(t, VPC_CIDR_SET, cfg.vpcCidrs),
    ...refillSet(t, EXCLUDE_CIDR_SET, exclude),
    `add chain ${t} ${SNAT_CHAIN} { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} ${SNAT_CHAIN}`,
    `add rule ${t} ${SNAT_CHAIN} ip saddr @${SNAT_SET} ip daddr != @${VPC_CIDR_SET} ip daddr != @${EXCLUDE_CIDR_SET}` +
      ` snat to ${cfg.snatSource}${snatPortFlag(cfg.randomizeSnat ?? 'prng')}`,
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
