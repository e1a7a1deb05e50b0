// AWS_EXTERNAL_SERVICE_CIDRS (upstream's name and meaning): destinations that pods on secondary
// ENIs must reach through the main routing table, that is out of the primary ENI, where a pod's
// `from <pod> lookup <ENI table>` rule (1536) would send them out of its own ENI. Typically a
// service outside the VPC reached through something only the primary ENI's route leads to. One
// rule `to <cidr> lookup main` per CIDR at priority 1535, set at start. A rule of that exact shape
// at 1535 for a CIDR no longer listed goes (upstream's reconciliation does the same, so rules a
// previous aws-node left are taken over rather than duplicated).

import type { KernelOp, RuleSpec } from '../plan/kernel-op.ts';
import { RULE_PRIORITY_EXTERNAL_SERVICE } from '../plan/kinds/rule.ts';
import { type IpRule, MAIN_TABLE } from '../plan/views.ts';
import type { Kernel } from './kernel.ts';
import { NODE } from './kernel.ts';

export { RULE_PRIORITY_EXTERNAL_SERVICE };

function ruleFor(cidr: string): RuleSpec {
  return { priority: RULE_PRIORITY_EXTERNAL_SERVICE, to: cidr, table: MAIN_TABLE };
}

/** The CIDR an external-service rule sends to the main table, or undefined for any other rule. */
function externalServiceCidr(rule: IpRule): string | undefined {
  if (rule.priority !== RULE_PRIORITY_EXTERNAL_SERVICE || rule.table !== MAIN_TABLE) return undefined;
  if (rule.src !== 'all' || rule.iif !== undefined || rule.other !== undefined || rule.dst === undefined)
    return undefined;
  return `${rule.dst}/${rule.dstlen ?? 32}`;
}

/** The rule changes that leave exactly one rule per CIDR of `cidrs` at 1535 (blocks, as parsed). */
export function externalServiceRuleChanges(rules: readonly IpRule[], cidrs: readonly string[]): KernelOp[] {
  const present = new Set(rules.map(externalServiceCidr).filter((c): c is string => c !== undefined));
  const wanted = new Set(cidrs);
  return [
    ...[...present].filter((c) => !wanted.has(c)).map((c): KernelOp => ({ op: 'ruleDel', rule: ruleFor(c) })),
    ...[...wanted].filter((c) => !present.has(c)).map((c): KernelOp => ({ op: 'ruleAdd', rule: ruleFor(c) })),
  ];
}

/** Sets the node's external-service rules to `cidrs`; throws naming the rule the kernel refused. */
export async function setupExternalServiceRules(kernel: Kernel, cidrs: readonly string[]): Promise<void> {
  const ops = externalServiceRuleChanges((await kernel.readNode()).rules, cidrs);
  if (ops.length === 0) return;
  const result = await kernel.run(NODE, ops, 'all');
  if (!result.entered) throw new Error(`cannot set up AWS_EXTERNAL_SERVICE_CIDRS rules: ${result.reason}`);
  const [first] = result.failures;
  if (first !== undefined) {
    const op = ops[first.index];
    const cidr = op?.op === 'ruleAdd' || op?.op === 'ruleDel' ? op.rule.to : undefined;
    throw new Error(`cannot set up the AWS_EXTERNAL_SERVICE_CIDRS rule for ${cidr}: ${first.message}`);
  }
}
