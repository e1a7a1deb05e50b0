// The emulated instance role's identity-based policy, evaluated as IAM does for actions: an
// explicit Deny wins, else an Allow that matches allows, else the action is implicitly denied.
// Actions match with IAM's wildcards (`*`, `?`, case-insensitive: `ec2:Describe*`); NotAction
// statements match every action they do not name. Resources and conditions are not modelled: every
// statement applies to every resource. No policy set: the role may do everything (the lab's default).

import { wildcard } from '../ec2/filters.ts';

export type IamDecision = 'allowed' | 'explicitDeny' | 'implicitDeny';

interface Statement {
  readonly effect: 'Allow' | 'Deny';
  readonly actions?: readonly RegExp[];
  readonly notActions?: readonly RegExp[];
}

export interface IamPolicy {
  /** The document as given (GET /admin/iam-policy shows it back). */
  readonly document: unknown;
  readonly statements: readonly Statement[];
}

/** IAM matches action names case-insensitively, with EC2's wildcards. */
const patternOf = (action: string): RegExp => wildcard(action, 'is');

function stringList(v: unknown, where: string): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  throw new Error(`${where} must be a string or a string array`);
}

/** Parses a policy document (`{ "Statement": [...] }`, a single statement object allowed too). */
export function parseIamPolicy(document: unknown): IamPolicy {
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw new Error('the policy must be a JSON object with a Statement');
  const raw = (document as { Statement?: unknown }).Statement;
  const list = Array.isArray(raw) ? raw : raw === undefined ? undefined : [raw];
  if (list === undefined) throw new Error('the policy has no Statement');
  const statements = list.map((s, i): Statement => {
    const where = `Statement[${i}]`;
    if (typeof s !== 'object' || s === null) throw new Error(`${where} must be an object`);
    const st = s as Record<string, unknown>;
    if (st.Effect !== 'Allow' && st.Effect !== 'Deny')
      throw new Error(`${where}.Effect must be Allow or Deny`);
    if ((st.Action === undefined) === (st.NotAction === undefined))
      throw new Error(`${where} needs exactly one of Action and NotAction`);
    return {
      effect: st.Effect,
      ...(st.Action === undefined
        ? {}
        : { actions: stringList(st.Action, `${where}.Action`).map(patternOf) }),
      ...(st.NotAction === undefined
        ? {}
        : { notActions: stringList(st.NotAction, `${where}.NotAction`).map(patternOf) }),
    };
  });
  return { document, statements };
}

function matches(s: Statement, action: string): boolean {
  if (s.actions !== undefined) return s.actions.some((p) => p.test(action));
  return !(s.notActions ?? []).some((p) => p.test(action));
}

/** IAM's decision for `action` (`ec2:CreateNetworkInterface`); no policy allows everything. */
export function decide(policy: IamPolicy | undefined, action: string): IamDecision {
  if (policy === undefined) return 'allowed';
  const applying = policy.statements.filter((s) => matches(s, action));
  if (applying.some((s) => s.effect === 'Deny')) return 'explicitDeny';
  return applying.some((s) => s.effect === 'Allow') ? 'allowed' : 'implicitDeny';
}
