// The JSON credentials document that both the instance profile (IMDS
// iam/security-credentials/<role>) and the container credentials endpoint answer with:
// {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}; IMDS adds "Code": "Success".
import { type AwsCredentials, CredentialsError, expiryOf } from './aws-credentials.ts';

export function readCredentialsJson(text: string, from: string): AwsCredentials {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new CredentialsError(`${from} answered with no JSON document`, true);
  }
  if (typeof doc !== 'object' || doc === null)
    throw new CredentialsError(`${from} answered with no object`, false);
  const field = (name: string): string | undefined => {
    const value = (doc as Record<string, unknown>)[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const code = field('Code');
  if (code !== undefined && code !== 'Success') {
    throw new CredentialsError(`${from} answered ${code}: ${field('Message') ?? '(no message)'}`, true);
  }
  const accessKeyId = field('AccessKeyId');
  const secretAccessKey = field('SecretAccessKey');
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw new CredentialsError(`${from} answered without AccessKeyId and SecretAccessKey`, false);
  }
  const sessionToken = field('Token');
  const expiresAt = expiryOf(field('Expiration'), from);
  return {
    accessKeyId,
    secretAccessKey,
    ...(sessionToken === undefined ? {} : { sessionToken }),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}
