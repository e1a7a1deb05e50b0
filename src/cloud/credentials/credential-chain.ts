// Where the agent's AWS credentials come from, in the order of the AWS SDK for Go v2's default
// chain (aws-node's): the environment's keys; IRSA's web identity; the shared files' `default`
// profile when it holds credentials; container credentials (EKS Pod Identity); the instance
// profile, unless AWS_EC2_METADATA_DISABLED rules it out. A profile AWS_PROFILE names comes before
// all of them and replaces the environment's keys and IRSA (a named profile without credentials
// leaves container credentials and the instance profile), as in that SDK. The first source that is
// configured is the one used — one configured but failing is an error to report, not a reason to
// fall through to the next.
import { readFile } from 'node:fs/promises';
import type { HttpTransport } from '../ec2-query/http-transport.ts';
import type { ImdsClient } from '../imds.ts';
import { type CredentialSource, CredentialsError } from './aws-credentials.ts';
import { containerCredentialSource } from './container-credentials.ts';
import { envCredentialSource } from './env-credentials.ts';
import { instanceProfileCredentialSource } from './instance-profile-credentials.ts';
import { profileCredentialSource } from './profile-credentials.ts';
import { webIdentityCredentialSource } from './web-identity-credentials.ts';

export interface CredentialChainDeps {
  readonly transport: HttpTransport;
  readonly imds: ImdsClient;
  readonly region: string;
  readonly readFile?: (path: string) => Promise<string>;
  readonly now?: () => number;
  /** Where `~/.aws` is looked for (default $HOME). */
  readonly home?: string;
  /** AWS_EC2_METADATA_DISABLED: credentials never come from the instance profile. */
  readonly metadataDisabled?: boolean;
}

/**
 * The chain's source for `env`. Throws CredentialsError (the agent does not start) when the
 * profile named cannot be used, or when nothing is configured and the instance profile is ruled out.
 */
export async function credentialSourceFromEnv(
  env: NodeJS.ProcessEnv,
  deps: CredentialChainDeps,
): Promise<CredentialSource> {
  const files = deps.readFile ?? ((path: string) => readFile(path, 'utf8'));
  const now = deps.now ?? Date.now;
  const stsDeps = { transport: deps.transport, readFile: files, region: deps.region, now };
  const profile = await profileCredentialSource(env, {
    ...stsDeps,
    ...(deps.home === undefined ? {} : { home: deps.home }),
  });
  const container = () => containerCredentialSource(env, { transport: deps.transport, readFile: files });
  const configured = profile.explicit
    ? (profile.source ?? container())
    : (envCredentialSource(env) ??
      webIdentityCredentialSource(env, stsDeps) ??
      profile.source ??
      container());
  if (configured !== undefined) return configured;
  if (deps.metadataDisabled !== true) return instanceProfileCredentialSource(deps.imds);
  throw new CredentialsError(
    'no AWS credentials are configured and AWS_EC2_METADATA_DISABLED=true rules out the instance profile: ' +
      'set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (IRSA), ' +
      'AWS_PROFILE, or AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity)',
    false,
  );
}
