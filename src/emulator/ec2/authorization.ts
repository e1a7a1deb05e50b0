// Who may call what, and DryRun, as EC2 answers them. Every call is authorized against the
// emulated instance role's policy (iam/iam-policy.ts): a denied call is 403 UnauthorizedOperation
// naming the permission, whether or not it is a dry run. A dry run of a permitted call is 412
// DryRunOperation and changes nothing. Actions whose request has no DryRun member in EC2's API
// (AssignPrivateIpAddresses, UnassignPrivateIpAddresses and their IPv6 forms) refuse the
// parameter as EC2 refuses any it does not know.
import type { IamDecision, IamPolicy } from '../iam/iam-policy.ts';
import { decide } from '../iam/iam-policy.ts';
import { Ec2Error } from './error.ts';
import type { QueryParams } from './params.ts';
import { OWNER_ID } from './render.ts';

/** The emulated instances' role, as IAM names it. */
export const INSTANCE_ROLE_NAME = 'vpcnet-node';
export const INSTANCE_ROLE_ARN = `arn:aws:iam::${OWNER_ID}:role/${INSTANCE_ROLE_NAME}`;

/** The role's session of a caller, as STS and EC2's messages name it. */
export function sessionArn(session: string): string {
  return `arn:aws:sts::${OWNER_ID}:assumed-role/${INSTANCE_ROLE_NAME}/${session}`;
}

/** EC2 actions of the emulator whose request has no DryRun member (EC2's API model). */
export const NO_DRY_RUN_ACTIONS: ReadonlySet<string> = new Set([
  'AssignPrivateIpAddresses',
  'UnassignPrivateIpAddresses',
  'AssignIpv6Addresses',
  'UnassignIpv6Addresses',
]);

/** What the emulated role may do; absent policy: everything. Changed by PUT /admin/iam-policy. */
export class IamRole {
  policy: IamPolicy | undefined;

  decide(permission: string): IamDecision {
    return decide(this.policy, permission);
  }
}

/**
 * The permissions a call needs: its own, and ec2:CreateTags for a create that tags what it makes
 * (IAM evaluates both for CreateNetworkInterface with TagSpecification).
 */
export function requiredPermissions(action: string, p: QueryParams): string[] {
  const own = `ec2:${action}`;
  if (action === 'CreateNetworkInterface' && p.tagSpecifications('network-interface').size > 0)
    return [own, 'ec2:CreateTags'];
  return [own];
}

function unauthorized(permission: string, decision: IamDecision, session: string): Ec2Error {
  const why =
    decision === 'explicitDeny'
      ? `with an explicit deny in an identity-based policy`
      : `because no identity-based policy allows the ${permission} action`;
  return new Ec2Error(
    'UnauthorizedOperation',
    `You are not authorized to perform this operation. User: ${sessionArn(session)} is not authorized to perform: ${permission} ${why}`,
    403,
  );
}

/** The access key a SigV4 Authorization header signs with: the session EC2's messages name. */
export function callerSession(authorization: string | undefined): string {
  const key = /Credential=([^/,\s]+)\//.exec(authorization ?? '')?.[1];
  return key ?? 'anonymous';
}

/**
 * Authorizes the call and answers a dry run. Throws the error EC2 answers with: UnknownParameter
 * (DryRun where the action has none), UnauthorizedOperation, DryRunOperation; returns when the
 * call is to be run for real.
 */
export function authorizeCall(role: IamRole, action: string, p: QueryParams, session: string): void {
  const dryRun = p.get('DryRun');
  if (dryRun !== undefined && NO_DRY_RUN_ACTIONS.has(action)) {
    throw new Ec2Error('UnknownParameter', 'The parameter DryRun is not recognized', 400);
  }
  for (const permission of requiredPermissions(action, p)) {
    const decision = role.decide(permission);
    if (decision !== 'allowed') throw unauthorized(permission, decision, session);
  }
  if (dryRun === 'true') {
    throw new Ec2Error('DryRunOperation', 'Request would have succeeded, but DryRun flag is set.', 412);
  }
}

/** Whether the call asks for a dry run (counted apart: it changes nothing). */
export function isDryRun(p: QueryParams): boolean {
  return p.get('DryRun') === 'true';
}
