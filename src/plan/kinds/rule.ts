// A policy rule on the node: `to <pod>/32 lookup main prio 512` brings traffic for a pod to it,
// `from <pod>/32 lookup <ENI table> prio 1536` sends a pod's traffic out through its ENI (the
// upstream's priorities, so operators recognise `ip rule` output). Inside a pod, a second
// interface's `from <its address> lookup <its table>` (side 'pod').
import type { RuleSpec } from '../kernel-op.ts';
import type { RuleResource } from '../resource.ts';
import { type IpRule, MAIN_TABLE } from '../views.ts';
import type { KindRules, Orphan } from './kind.ts';
import { BRANCH_DEVICE_PREFIX, RULE_PRIORITY_BRANCH } from './trunk-device.ts';

export const RULE_PRIORITY_TO_POD = 512;
export const RULE_PRIORITY_FROM_POD = 1536;
/**
 * AWS_EXTERNAL_SERVICE_CIDRS: `to <cidr> lookup main`, just before the pods' own `from` rules
 * (upstream's externalServiceIpRulePriority). Node setup, not a pod's resource.
 */
export const RULE_PRIORITY_EXTERNAL_SERVICE = 1535;

function selects(rule: IpRule, side: 'src' | 'dst', cidr: string | undefined): boolean {
  const value = rule[side];
  if (cidr === undefined) return side === 'src' ? value === 'all' : value === undefined;
  const [addr, len] = cidr.split('/');
  const viewLen = side === 'src' ? rule.srclen : rule.dstlen;
  return value === addr && (viewLen ?? 32) === Number(len ?? 32);
}

/** The kernel's rule is exactly this spec (no selector more or less). */
export function ruleMatches(rule: IpRule, spec: RuleSpec): boolean {
  return (
    rule.priority === spec.priority &&
    rule.table === spec.table &&
    rule.other === undefined &&
    rule.iif === spec.iif &&
    selects(rule, 'src', spec.from) &&
    selects(rule, 'dst', spec.to)
  );
}

function spec(r: RuleResource): RuleSpec {
  return {
    priority: r.priority,
    table: r.table,
    ...(r.from === undefined ? {} : { from: r.from }),
    ...(r.to === undefined ? {} : { to: r.to }),
    ...(r.iif === undefined ? {} : { iif: r.iif }),
  };
}

function describe(r: RuleSpec): string {
  const sel = [
    r.from === undefined ? '' : ` from ${r.from.replace(/\/32$/, '')}`,
    r.to === undefined ? '' : ` to ${r.to.replace(/\/32$/, '')}`,
    r.iif === undefined ? '' : ` iif ${r.iif}`,
  ].join('');
  return `rule${sel} lookup ${r.table === MAIN_TABLE ? 'main' : r.table} prio ${r.priority}`;
}

function identity(r: RuleSpec): string {
  return `rule ${r.priority} ${r.from ?? '-'} ${r.to ?? '-'} ${r.iif ?? '-'} ${r.table}`;
}

const isHostLength = (len: number | undefined) => len === undefined || len === 32;

/**
 * A rule exactly as vpcnet makes one for a pod, or undefined: `to <ip>/32 lookup main prio 512` or
 * `from <ip>/32 lookup <t> prio 1536`, with no other selector (`ip rule del` without a selector
 * the rule has would match someone else's rule too).
 */
export function podRuleOf(rule: IpRule): RuleSpec | undefined {
  if (rule.other !== undefined || rule.iif !== undefined) return undefined;
  if (
    rule.priority === RULE_PRIORITY_TO_POD &&
    rule.src === 'all' &&
    rule.dst !== undefined &&
    isHostLength(rule.dstlen) &&
    rule.table === MAIN_TABLE
  ) {
    return { priority: rule.priority, to: `${rule.dst}/32`, table: rule.table };
  }
  if (
    rule.priority === RULE_PRIORITY_FROM_POD &&
    rule.src !== 'all' &&
    isHostLength(rule.srclen) &&
    rule.dst === undefined
  ) {
    return { priority: rule.priority, from: `${rule.src}/32`, table: rule.table };
  }
  return undefined;
}

/** A strict-mode rule as vpcnet makes one: `iif <its branch device or host veth> lookup <t> prio 10`. */
export function branchRuleOf(rule: IpRule, vethPrefix: string): RuleSpec | undefined {
  if (rule.priority !== RULE_PRIORITY_BRANCH || rule.other !== undefined || rule.iif === undefined)
    return undefined;
  if (rule.src !== 'all' || rule.dst !== undefined) return undefined;
  if (!rule.iif.startsWith(BRANCH_DEVICE_PREFIX) && !rule.iif.startsWith(vethPrefix)) return undefined;
  return { priority: rule.priority, iif: rule.iif, table: rule.table };
}

/** The address a pod rule selects. */
export function ruleAddress(rule: RuleSpec): string {
  return (rule.to ?? rule.from ?? '').replace(/\/32$/, '');
}

export const ruleKind: KindRules<RuleResource> = {
  parse(read) {
    const from = read.optStr('from');
    const to = read.optStr('to');
    const iif = read.optStr('iif');
    return {
      kind: 'rule',
      priority: read.int('priority'),
      table: read.int('table'),
      ...(from === undefined ? {} : { from }),
      ...(to === undefined ? {} : { to }),
      ...(iif === undefined ? {} : { iif }),
      ...(read.optStr('side') !== undefined && read.oneOf('side', ['node', 'pod']) === 'pod'
        ? { side: 'pod' as const }
        : {}),
    };
  },
  create: (r) => [{ side: r.side ?? 'node', op: { op: 'ruleAdd', rule: spec(r) } }],
  // A pod-side rule does not go with the veth: DEL removes it in the pod, when the pod is still there.
  remove: (r) => [{ side: r.side ?? 'node', op: { op: 'ruleDel', rule: spec(r) } }],
  check(r, views) {
    const view = r.side === 'pod' ? views.pod : views.node;
    if (!view || view.rules.some((x) => ruleMatches(x, spec(r)))) return [];
    // `ip rule add` of an existing rule fails (EEXIST) and there is no `rule replace`: add only
    // what is missing.
    return [{ resource: r, problem: `${describe(r)} missing`, repair: ruleKind.create(r) }];
  },
  identity: (r) => (r.side === 'pod' ? `pod ${identity(spec(r))}` : identity(spec(r))),
  describe: (r) => (r.side === 'pod' ? `pod ${describe(spec(r))}` : describe(spec(r))),
  removalRank: 0,
  orphans(node, ctx) {
    // Someone else's rule at our priority naming the same address with a selector more (iif,
    // fwmark, ...) is an equal match for `ip rule del` (the kernel treats a selector the request
    // leaves out as a wildcard): leave that address alone rather than risk deleting theirs.
    const foreign = new Set(
      node.rules
        .filter((r) => r.other !== undefined || r.iif !== undefined)
        .flatMap((r) => [r.src, r.dst ?? ''].map((ip) => `${r.priority} ${ip}`)),
    );
    return node.rules.flatMap((r): Orphan[] => {
      const own = podRuleOf(r) ?? branchRuleOf(r, ctx.vethPrefix);
      if (!own) return [];
      const ip = ruleAddress(own);
      if (ip !== '' && (ctx.protectedAddresses.has(ip) || foreign.has(`${own.priority} ${ip}`))) return [];
      if (ctx.owns(identity(own))) return [];
      return [
        {
          identity: identity(own),
          description: describe(own),
          remove: [{ side: 'node', op: { op: 'ruleDel', rule: own } }],
        },
      ];
    });
  },
};
