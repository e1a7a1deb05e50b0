// The two calls of STS and IAM a preflight check makes, on the emulator's endpoint, on their wire
// formats (form POST, XML replies, `ErrorResponse` errors): STS GetCallerIdentity (who the caller
// is: the emulated instance role's session) and IAM SimulatePrincipalPolicy (what the role's policy
// decides for each action named, without calling them; itself subject to that policy, as
// iam:SimulatePrincipalPolicy). A request is STS's or IAM's by the service its SigV4 signature is
// scoped to, else by its API version.

import { callerSession, type IamRole, INSTANCE_ROLE_ARN, sessionArn } from '../ec2/authorization.ts';
import { OWNER_ID } from '../ec2/render.ts';
import { escapeXml } from '../ec2/xml.ts';
import { type HttpReply, textReply } from '../http-reply.ts';
import type { IdSource } from '../vpc/ids.ts';

const STS_VERSION = '2011-06-15';
const IAM_VERSION = '2010-05-08';
const STS_NAMESPACE = `https://sts.amazonaws.com/doc/${STS_VERSION}/`;
const IAM_NAMESPACE = `https://iam.amazonaws.com/doc/${IAM_VERSION}/`;

export type IamService = 'sts' | 'iam';

/** Which of the two a request is for, or undefined (EC2's, then). */
export function iamServiceOf(
  form: URLSearchParams,
  authorization: string | undefined,
): IamService | undefined {
  const scoped = /Credential=[^/]+\/\d{8}\/[^/]+\/([a-z0-9-]+)\/aws4_request/.exec(authorization ?? '')?.[1];
  if (scoped === 'sts' || scoped === 'iam') return scoped;
  if (scoped !== undefined) return undefined;
  const version = form.get('Version');
  if (version === STS_VERSION) return 'sts';
  return version === IAM_VERSION ? 'iam' : undefined;
}

function xmlReply(status: number, body: string): HttpReply {
  return {
    status,
    headers: { 'content-type': 'text/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
  };
}

function errorReply(
  service: IamService,
  status: number,
  code: string,
  message: string,
  requestId: string,
): HttpReply {
  const ns = service === 'sts' ? STS_NAMESPACE : IAM_NAMESPACE;
  return xmlReply(
    status,
    `<ErrorResponse xmlns="${ns}"><Error><Type>Sender</Type><Code>${escapeXml(code)}</Code>` +
      `<Message>${escapeXml(message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
  );
}

/** The `ActionNames.member.N` list of a SimulatePrincipalPolicy request. */
function memberList(form: URLSearchParams, name: string): string[] {
  const out: string[] = [];
  for (let i = 1; form.has(`${name}.member.${i}`); i++) out.push(form.get(`${name}.member.${i}`) ?? '');
  return out;
}

export function handleIamCall(
  service: IamService,
  body: string,
  role: IamRole,
  ids: IdSource,
  authorization: string | undefined,
): HttpReply {
  const form = new URLSearchParams(body);
  const action = form.get('Action') ?? '';
  const requestId = ids.requestId();
  const session = callerSession(authorization);
  if (service === 'sts' && action === 'GetCallerIdentity') {
    // Allowed whatever the policy says, as in STS.
    return xmlReply(
      200,
      `<GetCallerIdentityResponse xmlns="${STS_NAMESPACE}"><GetCallerIdentityResult>` +
        `<Arn>${escapeXml(sessionArn(session))}</Arn><UserId>AROAEMULATEDROLE:${escapeXml(session)}</UserId>` +
        `<Account>${OWNER_ID}</Account></GetCallerIdentityResult>` +
        `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
    );
  }
  if (service === 'iam' && action === 'SimulatePrincipalPolicy') {
    const decision = role.decide('iam:SimulatePrincipalPolicy');
    if (decision !== 'allowed') {
      return errorReply(
        service,
        403,
        'AccessDenied',
        `User: ${sessionArn(session)} is not authorized to perform: iam:SimulatePrincipalPolicy on resource: ${INSTANCE_ROLE_ARN} because no identity-based policy allows the iam:SimulatePrincipalPolicy action`,
        requestId,
      );
    }
    const source = form.get('PolicySourceArn');
    if (source !== INSTANCE_ROLE_ARN) {
      return errorReply(
        service,
        404,
        'NoSuchEntity',
        `The role with ARN ${source ?? '(none)'} cannot be found.`,
        requestId,
      );
    }
    const actions = memberList(form, 'ActionNames');
    if (actions.length === 0) {
      return errorReply(
        service,
        400,
        'ValidationError',
        'ActionNames must name at least one action',
        requestId,
      );
    }
    const results = actions
      .map(
        (a) =>
          `<member><EvalActionName>${escapeXml(a)}</EvalActionName><EvalResourceName>*</EvalResourceName>` +
          `<EvalDecision>${role.decide(a)}</EvalDecision></member>`,
      )
      .join('');
    return xmlReply(
      200,
      `<SimulatePrincipalPolicyResponse xmlns="${IAM_NAMESPACE}"><SimulatePrincipalPolicyResult>` +
        `<IsTruncated>false</IsTruncated><EvaluationResults>${results}</EvaluationResults>` +
        `</SimulatePrincipalPolicyResult><ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata>` +
        `</SimulatePrincipalPolicyResponse>`,
    );
  }
  if (action === '') return textReply(400, '');
  return errorReply(
    service,
    400,
    'InvalidAction',
    `Could not find operation ${action} for version ${form.get('Version') ?? '?'}`,
    requestId,
  );
}
