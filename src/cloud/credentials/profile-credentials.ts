// Credentials from a profile of the AWS shared config and credentials files (AWS_PROFILE, else
// `default`), as the AWS SDK for Go v2 that aws-node uses reads them: a profile's static keys
// (`aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`), or its web identity
// (`web_identity_token_file` with `role_arn`, traded at STS as IRSA's is). A profile that uses
// what vpcnet has no client for (an assumed role from another profile, SSO, a credential process)
// is refused when the agent starts, naming the key, rather than silently skipped. A profile
// without any credential setting leaves the choice to the next source of the chain, as the SDK.
import { homedir } from 'node:os';
import { errorText } from '../../infra/error-text.ts';
import { type AwsCredentials, type CredentialSource, CredentialsError } from './aws-credentials.ts';
import { type ProfileSettings, profileFromFiles, sharedFilePaths } from './shared-config-files.ts';
import { assumeRoleWithWebIdentity, type WebIdentityDeps } from './web-identity-credentials.ts';

/** Profile keys that name a way of getting credentials vpcnet does not implement, and why it is refused. */
const UNSUPPORTED_KEYS: readonly [string, string][] = [
  ['credential_process', 'an external credential process'],
  ['source_profile', 'a role assumed with another profile'],
  ['credential_source', 'a role assumed with the credentials of the environment, container or instance'],
  ['sso_session', 'IAM Identity Center (SSO)'],
  ['sso_start_url', 'IAM Identity Center (SSO)'],
];

export interface ProfileDeps extends WebIdentityDeps {
  /** Where `~` is (default $HOME, else the user's home). */
  readonly home?: string;
}

/**
 * The source of the profile AWS_PROFILE names (`explicit`), or of the `default` profile when the
 * files have one with credentials. Undefined when there is nothing to use. Throws CredentialsError
 * when AWS_PROFILE names a profile neither file has, or the profile cannot be used.
 */
export async function profileCredentialSource(
  env: NodeJS.ProcessEnv,
  deps: ProfileDeps,
): Promise<{ source: CredentialSource | undefined; explicit: boolean }> {
  const named = env.AWS_PROFILE?.trim();
  const name = named || 'default';
  const paths = sharedFilePaths(env, deps.home ?? (env.HOME?.trim() || homedir()));
  const [credentials, config] = await Promise.all([
    readIfPresent(paths.credentials, deps),
    readIfPresent(paths.config, deps),
  ]);
  const profile = profileFromFiles(name, { credentials, config });
  if (profile === undefined) {
    if (!named) return { source: undefined, explicit: false };
    throw new CredentialsError(
      `AWS_PROFILE=${name}: no profile [${name}] in ${paths.credentials} nor [profile ${name}] in ${paths.config}`,
      false,
    );
  }
  const label = `profile ${name} (${credentials === undefined ? paths.config : paths.credentials})`;
  return { source: sourceOf(name, label, profile, env, deps), explicit: Boolean(named) };
}

function sourceOf(
  name: string,
  label: string,
  profile: ProfileSettings,
  env: NodeJS.ProcessEnv,
  deps: ProfileDeps,
): CredentialSource | undefined {
  for (const [key, what] of UNSUPPORTED_KEYS) {
    if (!profile.has(key)) continue;
    throw new CredentialsError(
      `AWS profile ${name} gets its credentials from ${what} (${key}), which vpcnet cannot use: ` +
        'give the profile aws_access_key_id and aws_secret_access_key, or web_identity_token_file with ' +
        'role_arn, or use the environment (AWS_ACCESS_KEY_ID, IRSA) instead',
      false,
    );
  }
  const accessKeyId = profile.get('aws_access_key_id');
  const secretAccessKey = profile.get('aws_secret_access_key');
  if (accessKeyId || secretAccessKey) {
    if (!accessKeyId || !secretAccessKey) {
      const missing = accessKeyId ? 'aws_secret_access_key' : 'aws_access_key_id';
      throw new CredentialsError(`AWS profile ${name} has no ${missing} for its key pair`, false);
    }
    const sessionToken = profile.get('aws_session_token');
    const keys: AwsCredentials = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
    return { name: label, fetch: () => Promise.resolve(keys) };
  }
  const tokenFile = profile.get('web_identity_token_file');
  const roleArn = profile.get('role_arn');
  if (tokenFile && roleArn) {
    return assumeRoleWithWebIdentity(
      {
        tokenFile,
        roleArn,
        sessionName: profile.get('role_session_name'),
        name: `${label}: web identity ${roleArn}`,
      },
      env,
      deps,
    );
  }
  if (tokenFile || roleArn) {
    const [has, lacks] = tokenFile
      ? ['web_identity_token_file', 'role_arn']
      : ['role_arn', 'web_identity_token_file'];
    throw new CredentialsError(`AWS profile ${name} has ${has} without ${lacks}`, false);
  }
  return undefined;
}

/** The file's text, or undefined when it does not exist (the SDKs skip a missing file). */
async function readIfPresent(path: string, deps: Pick<ProfileDeps, 'readFile'>): Promise<string | undefined> {
  try {
    return await deps.readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return undefined;
    throw new CredentialsError(`cannot read AWS shared config file ${path}: ${errorText(err)}`, false, {
      cause: err,
    });
  }
}
