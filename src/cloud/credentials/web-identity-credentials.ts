// IRSA (IAM roles for service accounts): the projected service-account token in
// AWS_WEB_IDENTITY_TOKEN_FILE traded for temporary credentials of AWS_ROLE_ARN through STS
// AssumeRoleWithWebIdentity — an unsigned Query call to the regional STS endpoint. The token
// file is read again on every refresh: the kubelet rotates it.
import { errorText } from '../../infra/error-text.ts';
import type { HttpTransport } from '../ec2-query/http-transport.ts';
import { queryFormBody } from '../ec2-query/query-form.ts';
import { regionalEndpoint } from '../ec2-query/regional-endpoint.ts';
import { readServiceError } from '../ec2-query/service-error.ts';
import { parseXml, XmlShapeError } from '../ec2-query/xml-reader.ts';
import { type AwsCredentials, type CredentialSource, CredentialsError, expiryOf } from './aws-credentials.ts';

export interface WebIdentityDeps {
  readonly transport: HttpTransport;
  readonly readFile: (path: string) => Promise<string>;
  /** The region whose STS endpoint is asked (AWS_ENDPOINT_URL_STS overrides the endpoint). */
  readonly region: string;
  readonly now: () => number;
}

const STS_VERSION = '2011-06-15';

/** The IRSA source, or undefined when AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not both set. */
export function webIdentityCredentialSource(
  env: NodeJS.ProcessEnv,
  deps: WebIdentityDeps,
): CredentialSource | undefined {
  const tokenFile = env.AWS_WEB_IDENTITY_TOKEN_FILE?.trim();
  const roleArn = env.AWS_ROLE_ARN?.trim();
  if (!tokenFile || !roleArn) return undefined;
  return assumeRoleWithWebIdentity(
    {
      tokenFile,
      roleArn,
      sessionName: env.AWS_ROLE_SESSION_NAME?.trim(),
      name: `web identity (AWS_ROLE_ARN=${roleArn})`,
    },
    env,
    deps,
  );
}

/** What a web identity is traded with: from the environment (IRSA) or a shared config profile. */
export interface WebIdentityRole {
  readonly tokenFile: string;
  readonly roleArn: string;
  /** Default: `vpcnet-<now>`. */
  readonly sessionName?: string | undefined;
  /** For messages. */
  readonly name: string;
}

/** A token file traded at STS (AWS_ENDPOINT_URL_STS, else the region's) for a role's credentials. */
export function assumeRoleWithWebIdentity(
  role: WebIdentityRole,
  env: NodeJS.ProcessEnv,
  deps: WebIdentityDeps,
): CredentialSource {
  const { tokenFile, roleArn, name } = role;
  const sessionName = role.sessionName || `vpcnet-${deps.now()}`;
  const configured = env.AWS_ENDPOINT_URL_STS?.trim();
  const endpoint = configured ? new URL(configured) : regionalEndpoint('sts', deps.region);
  return {
    name,
    async fetch(): Promise<AwsCredentials> {
      const doing = `cannot get AWS credentials from ${name}`;
      let token: string;
      try {
        token = (await deps.readFile(tokenFile)).trim();
      } catch (err) {
        throw new CredentialsError(`${doing}: cannot read ${tokenFile}: ${errorText(err)}`, true, {
          cause: err,
        });
      }
      const body = queryFormBody('AssumeRoleWithWebIdentity', STS_VERSION, {
        RoleArn: roleArn,
        RoleSessionName: sessionName,
        WebIdentityToken: token,
      });
      const answer = await deps.transport
        .send('POST', endpoint, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, body)
        .catch((err: unknown) => {
          throw new CredentialsError(`${doing}: STS at ${endpoint.host}: ${errorText(err)}`, true, {
            cause: err,
          });
        });
      if (answer.status !== 200) {
        const err = readServiceError(answer.status, answer.body);
        // IDPCommunicationError: STS could not reach the token's issuer; worth another try.
        const retryable =
          answer.status >= 500 || err.code === 'IDPCommunicationError' || err.code === 'Throttling';
        throw new CredentialsError(`${doing}: STS ${err.code}: ${err.message}`, retryable, { cause: err });
      }
      return readAssumedCredentials(answer.body, doing);
    },
  };
}

function readAssumedCredentials(body: string, doing: string): AwsCredentials {
  try {
    const credentials = parseXml(body).child('AssumeRoleWithWebIdentityResult')?.child('Credentials');
    const accessKeyId = credentials?.string('AccessKeyId');
    const secretAccessKey = credentials?.string('SecretAccessKey');
    const sessionToken = credentials?.string('SessionToken');
    if (!accessKeyId || !secretAccessKey || !sessionToken) {
      throw new CredentialsError(
        `${doing}: STS answered without AccessKeyId, SecretAccessKey and SessionToken`,
        false,
      );
    }
    const expiresAt = expiryOf(credentials?.string('Expiration'), 'STS');
    return { accessKeyId, secretAccessKey, sessionToken, ...(expiresAt === undefined ? {} : { expiresAt }) };
  } catch (err) {
    if (err instanceof XmlShapeError)
      throw new CredentialsError(`${doing}: STS answer: ${err.message}`, false);
    throw err;
  }
}
