// The fleet's upstream-like mode: EC2 calls as aws-node makes them. aws-node's EC2 client is the
// AWS SDK for Go v2 with its standard retryer and RetryMaxAttempts 10 (pkg/awsutils/awssession):
// a retryable error (throttling, 5xx, a transport error) is retried after rand × 2^n seconds,
// at most 20 s, while the client's retry quota lasts (500 tokens; a retry costs 5, one after a
// timeout 10; a call that succeeds after retries gives its cost back, one that succeeds at once
// adds 1). No rate limit of its own, nothing shared between nodes: each node calls as it needs.
import { randomUUID } from 'node:crypto';
import { type Cloud, CloudError } from '../../src/cloud/cloud.ts';
import { isRetryable, isThrottled } from '../../src/cloud/ec2-retry.ts';
import { attemptError, type Ec2AttemptObserver } from '../../src/cloud/limited-cloud.ts';
import type { BucketClock } from '../../src/cloud/token-bucket.ts';

export interface StandardRetryPolicy {
  readonly maxAttempts: number;
  readonly maxBackoffMs: number;
  readonly quota: number;
  readonly retryCost: number;
  readonly timeoutRetryCost: number;
  readonly noRetryIncrement: number;
}

/** aws-sdk-go-v2's standard retryer as aws-node configures it. */
export const AWS_NODE_RETRY: StandardRetryPolicy = {
  maxAttempts: 10,
  maxBackoffMs: 20_000,
  quota: 500,
  retryCost: 5,
  timeoutRetryCost: 10,
  noRetryIncrement: 1,
};

/** The Cloud methods that are EC2 calls, and their actions (metadata and vpcCidrs are IMDS). */
const ACTIONS: Readonly<Record<string, string>> = {
  describeInstanceEnis: 'DescribeNetworkInterfaces',
  describeDetachedEnis: 'DescribeNetworkInterfaces',
  describeBranchEnis: 'DescribeNetworkInterfaces',
  describeSubnets: 'DescribeSubnets',
  instanceTypeLimits: 'DescribeInstanceTypes',
  describeTrunkAssociations: 'DescribeTrunkInterfaceAssociations',
  assignPrivateIps: 'AssignPrivateIpAddresses',
  assignIpv4Prefixes: 'AssignPrivateIpAddresses',
  unassignPrivateIps: 'UnassignPrivateIpAddresses',
  unassignIpv4Prefixes: 'UnassignPrivateIpAddresses',
  assignIpv6Prefixes: 'AssignIpv6Addresses',
  unassignIpv6Prefixes: 'UnassignIpv6Addresses',
  createEni: 'CreateNetworkInterface',
  attachEni: 'AttachNetworkInterface',
  setDeleteOnTermination: 'ModifyNetworkInterfaceAttribute',
  detachEni: 'DetachNetworkInterface',
  deleteEni: 'DeleteNetworkInterface',
};

const TIMEOUT_CODES: ReadonlySet<string> = new Set(['RequestTimeout', 'TimeoutError', 'ETIMEDOUT']);

/** The SDK's backoff before retry `n` (n = attempts made): uniform below 2^n s, capped. */
export function standardBackoffMs(policy: StandardRetryPolicy, n: number, random: () => number): number {
  return Math.min(policy.maxBackoffMs, random() * 2 ** n * 1000);
}

export class StandardRetryQuota {
  #tokens: number;
  readonly #p: StandardRetryPolicy;

  constructor(policy: StandardRetryPolicy) {
    this.#p = policy;
    this.#tokens = policy.quota;
  }

  get tokens(): number {
    return this.#tokens;
  }

  /** Takes the cost of a retry after `err`; undefined when the quota cannot pay it (no retry). */
  take(err: unknown): number | undefined {
    const timeout = err instanceof CloudError && TIMEOUT_CODES.has(err.code);
    const cost = timeout ? this.#p.timeoutRetryCost : this.#p.retryCost;
    if (this.#tokens < cost) return undefined;
    this.#tokens -= cost;
    return cost;
  }

  /** A call succeeded: after retries the last retry's cost comes back, at once 1 token. */
  succeeded(lastCost: number | undefined): void {
    this.#tokens = Math.min(this.#p.quota, this.#tokens + (lastCost ?? this.#p.noRetryIncrement));
  }
}

export interface StandardRetryOptions {
  readonly policy?: StandardRetryPolicy;
  readonly clock: BucketClock;
  readonly random: () => number;
  readonly observe?: Ec2AttemptObserver;
}

/** `inner` with aws-node's EC2 retries: every EC2 method retried as the SDK's standard retryer does. */
export function withStandardRetries(inner: Cloud, o: StandardRetryOptions): Cloud {
  const policy = o.policy ?? AWS_NODE_RETRY;
  const quota = new StandardRetryQuota(policy);
  const observe = o.observe ?? (() => {});
  async function call(action: string, attempt: () => Promise<unknown>): Promise<unknown> {
    let lastCost: number | undefined;
    for (let n = 1; ; n++) {
      const sentAt = o.clock.now();
      try {
        const result = await attempt();
        observe({ action, attempt: n, ms: o.clock.now() - sentAt });
        quota.succeeded(lastCost);
        return result;
      } catch (err) {
        const throttled = isThrottled(err);
        observe({ action, attempt: n, ms: o.clock.now() - sentAt, error: attemptError(err, throttled) });
        if (!isRetryable(err) || n >= policy.maxAttempts) throw err;
        lastCost = quota.take(err);
        if (lastCost === undefined) throw err; // retry quota exceeded: the SDK gives up
        await o.clock.sleep(standardBackoffMs(policy, n, o.random));
      }
    }
  }
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      const action = typeof prop === 'string' ? ACTIONS[prop] : undefined;
      if (action === undefined || typeof value !== 'function') return value;
      return (...given: unknown[]) => {
        // The SDK fills CreateNetworkInterface's ClientToken once per call, the same on each retry.
        const args = prop === 'createEni' && given[4] === undefined ? withToken(given) : given;
        return call(action, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      };
    },
  });
}

function withToken(args: readonly unknown[]): unknown[] {
  const out = [...args];
  while (out.length < 4) out.push(undefined);
  out[4] = randomUUID();
  return out;
}
