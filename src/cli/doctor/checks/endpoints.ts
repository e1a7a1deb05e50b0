// endpoints: can the node reach EC2 and STS where the agent would, and are its credentials taken?
// EC2 is read once (the node's instance type, which the known-instance-type check needs too);
// STS is asked who the caller is. A private cluster reaches both through interface VPC endpoints
// (AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL_STS); IRSA's credentials come from STS, so without it
// the agent has none.

import { CredentialsError } from '../../../cloud/credentials/aws-credentials.ts';
import { AwsServiceError } from '../../../cloud/ec2-query/service-error.ts';
import { errorText } from '../../../infra/error-text.ts';
import { type DoctorContext, report, skip } from '../context.ts';
import { callPatiently } from './permissions.ts';

const CHECK = 'endpoints';

/** Credentials refused by the service: wrong, expired, or of another account. */
const REFUSED = new Set([
  'AuthFailure',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'UnrecognizedClientException',
]);

/** Whether EC2 could be read (the checks that read it skip otherwise). */
export async function checkEndpoints(ctx: DoctorContext): Promise<boolean> {
  const { cloud, facts } = ctx;
  if (cloud === undefined) return false;
  const ec2 = cloud.clients.ec2Endpoint.origin;
  let ec2Reachable = true;
  if (ctx.config?.cloudAccess.imdsOnly === true)
    skip(ctx, CHECK, 'EC2 is not called (ENABLE_IMDS_ONLY_MODE)');
  else {
    try {
      await callPatiently(cloud.clients.ec2, 'DescribeInstanceTypes', {
        InstanceType: [facts?.instanceType ?? 't3.medium'],
      });
    } catch (err) {
      if (err instanceof AwsServiceError && !REFUSED.has(err.code)) {
        // An answer: EC2 is there (a refused permission is the permissions check's to report).
      } else {
        ec2Reachable = false;
        const refused = err instanceof AwsServiceError || err instanceof CredentialsError;
        report(ctx, {
          check: CHECK,
          severity: 'error',
          subject: refused ? `credentials (${cloud.clients.credentialSource})` : ec2,
          message: refused
            ? `EC2 refuses the agent's credentials: ${errorText(err)}`
            : `EC2 at ${ec2} does not answer: ${errorText(err)}`,
          fix: refused
            ? "give the node role's credentials to the agent (instance profile, or IRSA's AWS_ROLE_ARN and token)"
            : 'let the node reach EC2: a NAT gateway, or an ec2 interface VPC endpoint (then AWS_ENDPOINT_URL_EC2 or private DNS)',
        });
      }
    }
  }
  const sts = cloud.stsEndpoint.origin;
  try {
    await callPatiently(cloud.sts, 'GetCallerIdentity', {});
  } catch (err) {
    const irsa = (ctx.env.AWS_WEB_IDENTITY_TOKEN_FILE ?? '') !== '';
    const answered = err instanceof AwsServiceError;
    report(ctx, {
      check: CHECK,
      severity: irsa || answered ? 'error' : 'warning',
      subject: answered ? `credentials (${cloud.clients.credentialSource})` : sts,
      message: answered
        ? `STS refuses the agent's credentials: ${errorText(err)}`
        : `STS at ${sts} does not answer: ${errorText(err)}${irsa ? '; IRSA gets the agent its credentials there' : ''}`,
      fix: answered
        ? "check the node role's trust policy and the agent's credentials"
        : 'let the node reach STS: a NAT gateway, or an sts interface VPC endpoint (then AWS_ENDPOINT_URL_STS or private DNS)',
    });
  }
  return ec2Reachable;
}
