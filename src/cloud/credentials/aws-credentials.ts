// What signs an AWS request, where it came from, and the error when it cannot be had.
import { CloudError } from '../cloud.ts';
import type { SigningCredentials } from '../ec2-query/sigv4.ts';

export interface AwsCredentials extends SigningCredentials {
  /** When temporary credentials stop working (ms since the epoch); absent for long-term keys. */
  readonly expiresAt?: number;
}

/** One place credentials come from (the environment, STS, the instance profile, …). */
export interface CredentialSource {
  /** For messages: "instance profile (IMDS)", "web identity (AWS_ROLE_ARN=…)". */
  readonly name: string;
  fetch(): Promise<AwsCredentials>;
}

/** Credentials could not be had; retryable when the source may answer later (network, 5xx). */
export class CredentialsError extends CloudError {
  constructor(message: string, retryable: boolean, options?: { cause?: unknown }) {
    super(message, 'CredentialsError', retryable, options);
    this.name = 'CredentialsError';
  }
}

/** A credentials document's Expiration (ISO 8601) as ms since the epoch. */
export function expiryOf(expiration: string | undefined, from: string): number | undefined {
  if (expiration === undefined) return undefined;
  const at = Date.parse(expiration);
  if (Number.isNaN(at)) {
    throw new CredentialsError(
      `${from} gave an Expiration that is no time: ${JSON.stringify(expiration)}`,
      false,
    );
  }
  return at;
}
