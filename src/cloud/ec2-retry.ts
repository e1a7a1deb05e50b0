// When and how long to wait before trying an EC2 call again: exponential backoff with full
// jitter (a uniform draw below the exponential ceiling), as EC2's throttling documentation
// recommends, so that agents throttled together do not come back together.
import { CloudError } from './cloud.ts';

/**
 * Codes of a throttled request: EC2 answers RequestLimitExceeded; the others are the AWS-wide
 * names the AWS SDKs also treat as throttling. The request was not carried out.
 */
export const THROTTLING_CODES: ReadonlySet<string> = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
]);

export interface RetryPolicy {
  /** Attempts per call, the first included; 1 = no retries. */
  readonly maxAttempts: number;
  /** Ceiling of the first backoff; each retry doubles it. */
  readonly baseDelayMs: number;
  /** The ceiling never grows past this. */
  readonly maxDelayMs: number;
  /** No retry starts after this long since the call began (waits for tokens included). */
  readonly maxTotalMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  maxTotalMs: 60_000,
};

/** The wait before retry number `retry` (1 = the first retry): uniform in [0, ceiling). */
export function backoffMs(policy: RetryPolicy, retry: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

export function isThrottled(err: unknown): boolean {
  return err instanceof CloudError && THROTTLING_CODES.has(err.code);
}

/**
 * Worth another attempt: throttling, EC2's 5xx and timeouts, network errors (CloudError marks
 * them retryable). Anything else (a bad parameter, a missing ENI, a reply we cannot read) would
 * fail the same way again.
 */
export function isRetryable(err: unknown): boolean {
  return err instanceof CloudError && err.retryable;
}
