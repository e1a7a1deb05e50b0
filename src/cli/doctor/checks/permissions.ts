// ec2-permissions: may the node's role call what its agent will call? Every driver action this
// node needs is tried with DryRun=true where EC2's API has it (DryRunOperation: allowed;
// UnauthorizedOperation: the finding names the permission). The address actions, which have no
// DryRun, go to IAM's policy simulator for the role STS names as the caller; where the role may
// not simulate, they are reported as not verifiable ahead. Nothing is changed either way.

import type { QueryStruct } from '../../../cloud/ec2-query/query-form.ts';
import { AwsServiceError } from '../../../cloud/ec2-query/service-error.ts';
import type { XmlElement } from '../../../cloud/ec2-query/xml-reader.ts';
import { errorText } from '../../../infra/error-text.ts';
import { type DoctorCloud, type DoctorContext, report, skip } from '../context.ts';
import { DRIVER_EC2_ACTIONS, neededActions } from '../ec2-actions.ts';

const CHECK = 'ec2-permissions';
const DENIED = new Set(['UnauthorizedOperation', 'AccessDenied', 'AccessDeniedException']);
const THROTTLED = new Set(['RequestLimitExceeded', 'Throttling', 'ThrottlingException']);

/** One call, retried a few times while EC2 throttles or fails on its side; the answer or the error. */
export async function callPatiently(
  client: { call(action: string, params: QueryStruct): Promise<XmlElement> },
  action: string,
  params: QueryStruct,
): Promise<XmlElement> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.call(action, params);
    } catch (err) {
      const retry = err instanceof AwsServiceError && (THROTTLED.has(err.code) || err.status >= 500);
      if (!retry || attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 150 * attempt));
    }
  }
}

/** The role behind an assumed-role session ARN (what IAM's simulator takes). */
export function roleArnOf(callerArn: string): string | undefined {
  const m = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(callerArn);
  return m === null ? undefined : `arn:${m[1]}:iam::${m[2]}:role/${m[3]}`;
}

function denialText(err: AwsServiceError): string {
  return `${err.code}: ${err.message.split('. Encoded authorization failure message')[0]}`;
}

async function dryRuns(
  ctx: DoctorContext,
  cloud: DoctorCloud,
  actions: readonly string[],
  role: string,
): Promise<void> {
  const facts = ctx.facts;
  if (facts === undefined) return;
  await Promise.all(
    actions.map(async (action) => {
      const entry = DRIVER_EC2_ACTIONS[action];
      if (entry === undefined || !entry.probe.dryRun) return;
      try {
        await callPatiently(cloud.clients.ec2, action, { ...entry.probe.params(facts), DryRun: true });
        skip(
          ctx,
          CHECK,
          `${action}: EC2 answered a dry run without DryRunOperation; permission not confirmed`,
        );
      } catch (err) {
        if (!(err instanceof AwsServiceError)) throw err;
        if (err.code === 'DryRunOperation') return;
        if (DENIED.has(err.code)) {
          const permission = /perform: (\S+)/.exec(err.message)?.[1] ?? `ec2:${action}`;
          report(ctx, {
            check: CHECK,
            severity: 'error',
            subject: permission,
            message: `the node's role may not call ${permission}, which the agent needs to ${entry.purpose} (dry run of ${action}: ${denialText(err)})`,
            fix: `allow ${permission} in the policy of ${role} (AmazonEKS_CNI_Policy has it)`,
          });
          return;
        }
        skip(
          ctx,
          CHECK,
          `${action}: EC2 answered ${err.code} before the permission was confirmed (${err.message})`,
        );
      }
    }),
  );
}

/** The caller's ARN from STS, or undefined (the endpoint check reports why). */
async function callerArn(cloud: DoctorCloud): Promise<string | undefined> {
  try {
    return (await callPatiently(cloud.sts, 'GetCallerIdentity', {}))
      .child('GetCallerIdentityResult')
      ?.string('Arn');
  } catch {
    return undefined;
  }
}

async function simulate(
  ctx: DoctorContext,
  cloud: DoctorCloud,
  actions: readonly string[],
  role: string | undefined,
): Promise<void> {
  if (actions.length === 0) return;
  const names = actions.map((a) => `ec2:${a}`);
  const notVerifiable = (why: string) =>
    report(ctx, {
      check: CHECK,
      severity: 'warning',
      subject: names.join(', '),
      message: `not verifiable ahead: EC2's API has no DryRun for them, and ${why}; a missing one shows only when the agent first needs it`,
      fix: `allow iam:SimulatePrincipalPolicy on ${role ?? 'the node role'} for vpcnetctl doctor, or check the role's policy for ${names.join(', ')} by hand`,
    });
  if (role === undefined) {
    notVerifiable('STS did not say which role the node has (see the endpoints check)');
    return;
  }
  let answer: XmlElement;
  try {
    answer = await callPatiently(cloud.iam, 'SimulatePrincipalPolicy', {
      PolicySourceArn: role,
      ActionNames: { member: names },
    });
  } catch (err) {
    const why =
      err instanceof AwsServiceError && DENIED.has(err.code)
        ? 'the role may not call iam:SimulatePrincipalPolicy'
        : `IAM's policy simulator did not answer (${errorText(err)})`;
    notVerifiable(why);
    return;
  }
  const results = answer.child('SimulatePrincipalPolicyResult')?.child('EvaluationResults')?.children ?? [];
  for (const r of results.filter((c) => c.name === 'member')) {
    const name = r.string('EvalActionName') ?? '?';
    const decision = r.string('EvalDecision') ?? '?';
    if (decision === 'allowed') continue;
    const action = name.replace(/^ec2:/, '');
    report(ctx, {
      check: CHECK,
      severity: 'error',
      subject: name,
      message: `the node's role may not call ${name}, which the agent needs to ${DRIVER_EC2_ACTIONS[action]?.purpose ?? 'work'} (IAM's policy simulator: ${decision})`,
      fix: `allow ${name} in the policy of ${role} (AmazonEKS_CNI_Policy has it)`,
    });
  }
}

/** The needed actions with DryRun by dry run, the others by IAM's simulator. */
export async function checkPermissions(ctx: DoctorContext): Promise<void> {
  const { config, cloud } = ctx;
  if (config === undefined || cloud === undefined)
    return skip(ctx, CHECK, 'no configuration or no EC2 client');
  const needed = neededActions(config);
  if (needed.length === 0) return skip(ctx, CHECK, 'this node calls no EC2 action (ENABLE_IMDS_ONLY_MODE)');
  if (ctx.facts === undefined)
    return skip(ctx, CHECK, 'the node’s instance is not known (see the imds check)');
  const arn = await callerArn(cloud);
  const role = arn === undefined ? undefined : (roleArnOf(arn) ?? arn);
  const withDryRun = needed.filter((a) => DRIVER_EC2_ACTIONS[a]?.probe.dryRun === true);
  const without = needed.filter((a) => DRIVER_EC2_ACTIONS[a]?.probe.dryRun === false);
  await Promise.all([
    dryRuns(ctx, cloud, withDryRun, role ?? 'the node role'),
    simulate(ctx, cloud, without, role),
  ]);
}
