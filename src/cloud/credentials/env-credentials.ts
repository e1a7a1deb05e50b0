// Long-term (or externally refreshed) keys from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, as every AWS SDK reads them first.
import type { AwsCredentials, CredentialSource } from './aws-credentials.ts';

/** The environment's keys, or undefined when AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set. */
export function envCredentialSource(env: NodeJS.ProcessEnv): CredentialSource | undefined {
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  if (!accessKeyId || !secretAccessKey) return undefined;
  const sessionToken = env.AWS_SESSION_TOKEN?.trim();
  const credentials: AwsCredentials = {
    accessKeyId,
    secretAccessKey,
    ...(sessionToken ? { sessionToken } : {}),
  };
  return { name: 'environment (AWS_ACCESS_KEY_ID)', fetch: () => Promise.resolve(credentials) };
}
