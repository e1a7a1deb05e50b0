// NodePort support as upstream sets it (AWS_VPC_CNI_NODE_PORT_SUPPORT, AWS_VPC_K8S_CNI_CONNMARK):
// a connection that arrives on the primary ENI for a node address gets the mark in conntrack; the
// packets of that connection coming back from a pod get it restored onto the packet; a policy rule
// sends marked packets to the main table. Without that, the reply to NodePort traffic DNATed to a
// pod on a secondary ENI follows the pod's `from <pod> lookup <ENI table>` rule and leaves through
// the secondary ENI with the primary ENI's address as source, which the VPC drops.
// The rules live in vpcnet's table (`ip vpcnet`, chain `nodeport`); the chain is rebuilt on every
// run, and removed when the support is off, in one nft transaction.
import { MAIN_TABLE } from '../../plan/views.ts';
import type { NodePortConfig } from '../kernel.ts';
import { SNAT_TABLE } from './snat.ts';

export const NODE_PORT_CHAIN = 'nodeport';
/** Upstream's hostRulePriority: before the pods' `from` rules (1536), after `to` rules (512). */
export const NODE_PORT_RULE_PRIORITY = 1024;

const LINK_PREFIX = /^[A-Za-z0-9_.-]{1,15}$/;

function hex(n: number): string {
  return `0x${n.toString(16)}`;
}

function assertMark(mark: number): void {
  if (!Number.isInteger(mark) || mark <= 0 || mark > 0xffffffff) {
    throw new Error(`invalid connmark ${mark}: a non-zero 32-bit value`);
  }
}

/** Each set bit of `mark`, lowest first. */
function bitsOf(mark: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < 32; i++) {
    const bit = 2 ** i;
    if (Math.floor(mark / bit) % 2 === 1) out.push(bit);
  }
  return out;
}

/**
 * The nft script for the `nodeport` chain. A mangle-priority prerouting chain runs before
 * kube-proxy's DNAT (dstnat), so `fib daddr . iif type local` still sees the node's own address
 * (iptables' `--dst-type LOCAL --limit-iface-in`). Restoring the mark is done per bit, with one
 * rule clearing and one setting it, as upstream's nftables backend does: nft 1.0.6 cannot combine
 * the packet mark and the conntrack mark in one expression, and other bits of the packet mark
 * belong to other software.
 */
export function nodePortScript(cfg: NodePortConfig): string {
  assertMark(cfg.mark);
  for (const name of [cfg.primaryLink, ...cfg.podLinkPrefixes]) {
    if (!LINK_PREFIX.test(name)) throw new Error(`invalid link name ${JSON.stringify(name)}`);
  }
  const t = `ip ${SNAT_TABLE}`;
  const chain = `${t} ${NODE_PORT_CHAIN}`;
  const lines = [
    `add table ${t}`,
    `add chain ${chain} { type filter hook prerouting priority mangle; policy accept; }`,
    `flush chain ${chain}`,
  ];
  if (!cfg.enabled) return `${[...lines, `delete chain ${chain}`].join('\n')}\n`;
  const mark = hex(cfg.mark);
  lines.push(
    `add rule ${chain} iifname "${cfg.primaryLink}" fib daddr . iif type local ct mark set ct mark or ${mark}`,
  );
  const pods = `{ ${cfg.podLinkPrefixes.map((p) => `"${p}*"`).join(', ')} }`;
  for (const bit of bitsOf(cfg.mark)) {
    const b = hex(bit);
    const clear = hex(0xffffffff - bit);
    lines.push(
      `add rule ${chain} iifname ${pods} ct mark and ${b} == 0x0 meta mark set meta mark and ${clear}`,
      `add rule ${chain} iifname ${pods} ct mark and ${b} == ${b} meta mark set meta mark or ${b}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The policy rule, in `ip rule` words (without add/del). */
export function nodePortRuleArgs(mark: number): string[] {
  assertMark(mark);
  return ['prio', String(NODE_PORT_RULE_PRIORITY), 'fwmark', `${hex(mark)}/${hex(mark)}`, 'lookup', 'main'];
}

/** A NodePort rule as `ip -j rule show` lists it: its mark and mask. */
export interface ListedMarkRule {
  readonly mark: number;
  readonly mask: number;
}

/**
 * vpcnet's NodePort rules among `ip -j rule show` output: priority 1024, table main, an fwmark and
 * nothing else to select on. A rule from an earlier CONNMARK value is found too, so it can go.
 */
export function parseNodePortRules(stdout: string): ListedMarkRule[] {
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    return [];
  }
  if (!Array.isArray(doc)) return [];
  const known = new Set(['priority', 'src', 'fwmark', 'fwmask', 'table']);
  return doc.flatMap((item): ListedMarkRule[] => {
    const r = item as Record<string, unknown>;
    if (r.priority !== NODE_PORT_RULE_PRIORITY || typeof r.fwmark !== 'string') return [];
    if (r.table !== 'main' && r.table !== String(MAIN_TABLE)) return [];
    if (r.src !== 'all' || Object.keys(r).some((k) => !known.has(k))) return [];
    const mark = Number(r.fwmark);
    const mask = typeof r.fwmask === 'string' ? Number(r.fwmask) : 0xffffffff;
    return Number.isFinite(mark) && Number.isFinite(mask) ? [{ mark, mask }] : [];
  });
}

/** The `ip rule` commands that leave exactly the wanted NodePort rule (none when disabled). */
export function nodePortRuleChanges(listed: readonly ListedMarkRule[], cfg: NodePortConfig): string[][] {
  const wanted = (r: ListedMarkRule) => cfg.enabled && r.mark === cfg.mark && r.mask === cfg.mark;
  const out = listed
    .filter((r) => !wanted(r))
    .map((r) => [
      'rule',
      'del',
      'prio',
      String(NODE_PORT_RULE_PRIORITY),
      'fwmark',
      `${hex(r.mark)}/${hex(r.mask)}`,
      'lookup',
      'main',
    ]);
  if (cfg.enabled && !listed.some(wanted)) out.push(['rule', 'add', ...nodePortRuleArgs(cfg.mark)]);
  return out;
}

/**
 * Upstream sets rp_filter to 2 (loose) on the primary ENI, because the kernel's reverse-path check
 * runs after the DNAT: it looks up the route back with the pod as source, finds the pod's ENI
 * table, and a strict check drops a NodePort packet that came in on the primary ENI. vpcnet changes
 * no sysctl: this says what the operator must set, or undefined when the effective value (the
 * larger of `all` and the link's) is fine.
 */
export function rpFilterProblem(link: string, all: number, dev: number): string | undefined {
  if (Math.max(all, dev) !== 1) return undefined;
  return (
    `NodePort support: rp_filter is strict (1) on ${link} (all=${all}, ${link}=${dev}): a NodePort ` +
    `connection to a pod on a secondary ENI is dropped; set net.ipv4.conf.${link}.rp_filter=2 ` +
    (all === 1 ? 'and net.ipv4.conf.all.rp_filter=2 (or 0) ' : '') +
    'on the node, as upstream does'
  );
}
