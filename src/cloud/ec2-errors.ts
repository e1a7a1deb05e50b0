// Turns what an EC2 call throws into a CloudError an operator can act on:
// "cannot attach ENI eni-0a1 to i-0b2 at device index 2: AttachmentLimitExceeded: <EC2's message>".
import { errorText } from '../infra/error-text.ts';
import { CloudError } from './cloud.ts';
import { CredentialsError } from './credentials/aws-credentials.ts';
import { AwsServiceError } from './ec2-query/service-error.ts';
import { XmlShapeError } from './ec2-query/xml-reader.ts';
import { THROTTLING_CODES } from './ec2-retry.ts';

/** EC2 codes worth retrying later: throttling, EC2's own failures (5xx, timeouts), clock skew. */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  ...THROTTLING_CODES,
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  // Signed with a clock too far off: not carried out, and the client has taken EC2's time since.
  'RequestExpired',
  'RequestInTheFuture',
  'RequestTimeTooSkewed',
]);

/** Node socket errors and our transport's timeouts: the request may not have reached EC2. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'TimeoutError',
  'RequestTimeout',
]);

/** `doing` completes "cannot …", e.g. "attach ENI eni-0a1 to i-0b2 at device index 2". */
export function toCloudError(doing: string, err: unknown): CloudError {
  if (err instanceof CredentialsError) {
    // Says where credentials were sought; the call it stopped is said here.
    return new CredentialsError(`cannot ${doing}: ${err.message}`, err.retryable, { cause: err });
  }
  if (err instanceof CloudError) return err;
  if (err instanceof AwsServiceError) {
    const code = err.code;
    // 429 is throttling without EC2's code (a proxy's, say): worth a later try like 5xx.
    const retryable = RETRYABLE_CODES.has(code) || err.status >= 500 || err.status === 429;
    return new CloudError(`cannot ${doing}: ${code}: ${err.message}`, code, retryable, { cause: err });
  }
  if (err instanceof XmlShapeError) {
    return new CloudError(`cannot ${doing}: EC2 reply unreadable: ${err.message}`, 'InvalidResponse', false, {
      cause: err,
    });
  }
  const code = networkCode(err);
  if (code !== undefined) {
    const detail = errorText(err);
    return new CloudError(`cannot ${doing}: ${code}: ${detail}`, code, true, { cause: err });
  }
  const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new CloudError(`cannot ${doing}: ${detail}`, 'Unknown', false, { cause: err });
}

/** A reply EC2 should never send (a required field missing): a driver or emulator bug. */
export function invalidResponse(doing: string, what: string): CloudError {
  return new CloudError(`cannot ${doing}: EC2 reply lacks ${what}`, 'InvalidResponse', false);
}

function networkCode(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const errno = (err as { code?: unknown }).code;
  if (typeof errno === 'string' && NETWORK_CODES.has(errno)) return errno;
  if (NETWORK_CODES.has(err.name)) return err.name;
  return undefined;
}
