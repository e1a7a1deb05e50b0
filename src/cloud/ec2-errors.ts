// Turns what the EC2 SDK throws into a CloudError an operator can act on:
// "cannot attach ENI eni-0a1 to i-0b2 at device index 2: AttachmentLimitExceeded: <EC2's message>".
import { EC2ServiceException } from '@aws-sdk/client-ec2';
import { errorText } from '../infra/error-text.ts';
import { CloudError } from './cloud.ts';
import { THROTTLING_CODES } from './ec2-retry.ts';

/** EC2 codes worth retrying later: throttling, and EC2's own failures (5xx, timeouts). */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  ...THROTTLING_CODES,
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** Node socket errors and SDK transport errors: the request may not have reached EC2. */
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
  if (err instanceof CloudError) return err;
  const attempts = attemptsOf(err);
  const suffix = attempts !== undefined && attempts > 1 ? ` (after ${attempts} attempts)` : '';
  if (err instanceof EC2ServiceException) {
    const code = err.name;
    const status = err.$metadata.httpStatusCode;
    const retryable = RETRYABLE_CODES.has(code) || (status !== undefined && status >= 500);
    return new CloudError(`cannot ${doing}: ${code}: ${err.message}${suffix}`, code, retryable, {
      cause: err,
    });
  }
  const code = networkCode(err);
  if (code !== undefined) {
    const detail = errorText(err);
    return new CloudError(`cannot ${doing}: ${code}: ${detail}${suffix}`, code, true, { cause: err });
  }
  const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new CloudError(`cannot ${doing}: ${detail}${suffix}`, 'Unknown', false, { cause: err });
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

function attemptsOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const metadata = (err as { $metadata?: { attempts?: unknown } }).$metadata;
  return typeof metadata?.attempts === 'number' ? metadata.attempts : undefined;
}
