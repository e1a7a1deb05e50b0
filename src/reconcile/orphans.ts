// Garbage collection, decided: which of the kernel's vpcnet-shaped resources no attachment owns.
// Pure, so the ownership rule can be checked exhaustively; the reconciler calls it with the ledger
// as it is right before it removes anything.
import {
  MAIN_TABLE,
  type NodeObservation,
  RULE_PRIORITY_FROM_POD,
  RULE_PRIORITY_TO_POD,
} from '../dataplane/dataplane.ts';
import type { IpRule } from '../dataplane/ip-json.ts';
import type { OwnedResource } from '../ledger/attachment.ts';

export type RuleResource = Extract<OwnedResource, { kind: 'rule' }>;

/** Who owns what, as the ledger says now (records in phase 'adding' included). */
export interface Ownership {
  /** Host veths named by an attachment. */
  readonly ownsVeth: (name: string) => boolean;
  /** Addresses held by an attachment. */
  readonly ownsAddress: (ip: string) => boolean;
  /** Addresses vpcnet must never collect rules for, e.g. the ENIs' primary IPs (setupEni's rules). */
  readonly protectedAddresses: ReadonlySet<string>;
}

const isFullLength = (len: number | undefined) => len === undefined || len === 32;

/**
 * A rule exactly as vpcnet makes it for a pod, in OwnedResource form (so removeResources deletes
 * exactly it), or undefined: `to <ip>/32 lookup main prio 512` or `from <ip>/32 lookup <t> prio 1536`,
 * with no other selector (ip rule del without the selector would match someone else's rule too).
 */
export function podRuleOf(rule: IpRule): RuleResource | undefined {
  if (rule.other !== undefined) return undefined;
  if (
    rule.priority === RULE_PRIORITY_TO_POD &&
    rule.src === 'all' &&
    rule.dst !== undefined &&
    isFullLength(rule.dstlen) &&
    rule.table === MAIN_TABLE
  ) {
    return { kind: 'rule', priority: rule.priority, to: `${rule.dst}/32`, table: rule.table };
  }
  if (
    rule.priority === RULE_PRIORITY_FROM_POD &&
    rule.src !== 'all' &&
    isFullLength(rule.srclen) &&
    rule.dst === undefined
  ) {
    return { kind: 'rule', priority: rule.priority, from: `${rule.src}/32`, table: rule.table };
  }
  return undefined;
}

/** The address a pod rule selects. */
export function ruleAddress(rule: RuleResource): string {
  return (rule.to ?? rule.from ?? '').replace(/\/32$/, '');
}

/** The candidates for collection: what looks like vpcnet's and no live attachment owns. */
export function findOrphans(node: NodeObservation, vethPrefix: string, owner: Ownership): OwnedResource[] {
  const isFree = (ip: string) => !owner.ownsAddress(ip) && !owner.protectedAddresses.has(ip);
  const veths: OwnedResource[] = node.veths
    .filter((l) => l.ifname.startsWith(vethPrefix) && !owner.ownsVeth(l.ifname))
    .map((l) => ({ kind: 'veth', hostName: l.ifname }));
  // Someone else's rule at our priority naming the same address would be an equal match for
  // `ip rule del`: leave that address alone rather than risk deleting theirs.
  const foreign = new Set(
    node.rules
      .filter((r) => r.other !== undefined)
      .flatMap((r) => [r.src, r.dst ?? ''].map((ip) => `${r.priority} ${ip}`)),
  );
  const rules: OwnedResource[] = node.rules.flatMap((r) => {
    const own = podRuleOf(r);
    if (!own) return [];
    const ip = ruleAddress(own);
    return isFree(ip) && !foreign.has(`${own.priority} ${ip}`) ? [own] : [];
  });
  const snat: OwnedResource[] = (node.snatElements ?? []).filter(isFree).map((ip) => ({ kind: 'snat', ip }));
  return [...veths, ...rules, ...snat];
}
