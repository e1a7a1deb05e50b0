// Every EC2 call of one agent through one token bucket, retried with backoff when EC2 throttles
// or fails in a way worth retrying. A decorator: it wraps any Cloud (AwsCloud in vpcnetd, a fake
// in tests). IMDS (metadata) is not EC2 and is not limited by it: it passes straight through.
// EC2 throttles per account and region, so every agent of a cluster shares EC2's buckets; this
// one keeps one agent to its share (the settings' text says how the defaults were chosen).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import {
  type BranchEniFacts,
  type Cloud,
  CloudError,
  type ConnectionTracking,
  type CreatedEni,
  type DetachedEni,
  type EniInfo,
  type InstanceMetadata,
  type InstanceTypeLimits,
  type SubnetAddressUse,
  type SubnetCidrReservation,
  type SubnetInfo,
  type SubnetQuery,
  type TrunkAssociation,
} from './cloud.ts';
import { type Ec2CallFigures, Ec2CallTally } from './ec2-call-figures.ts';
import { backoffMs, DEFAULT_RETRY_POLICY, isRetryable, isThrottled, type RetryPolicy } from './ec2-retry.ts';
import { type BucketClock, TokenBucket } from './token-bucket.ts';

export interface Ec2RateLimit {
  /** Sustained EC2 calls per second (fractional allowed). */
  readonly qps: number;
  /** Calls that may go at once after a quiet time. */
  readonly burst: number;
  /** Attempts per call, the first included (VPCNET_EC2_MAX_ATTEMPTS). */
  readonly maxAttempts: number;
}

export interface LimitedCloudDeps {
  readonly inner: Cloud;
  readonly limit: Ec2RateLimit;
  readonly log: Logger;
  /** Monotonic ms and sleep; default performance.now and a timer. */
  readonly clock?: BucketClock;
  /** Uniform in [0,1) for the backoff's jitter; default Math.random. */
  readonly random?: () => number;
  /** One CreateNetworkInterface ClientToken per logical call; default a random UUID. */
  readonly newClientToken?: () => string;
  /** Backoff and total-time bounds; maxAttempts comes from `limit`. */
  readonly retry?: Partial<Omit<RetryPolicy, 'maxAttempts'>>;
  /** Told of every request to EC2 as it is answered (metrics, the state's last errors); default none. */
  readonly observe?: Ec2AttemptObserver;
}

/** One request to EC2 (an attempt of a call), as it was answered. */
export interface Ec2Attempt {
  readonly action: string;
  /** From sending the request to its answer (the token wait excluded), ms. */
  readonly ms: number;
  /** Absent when EC2 answered with success. */
  readonly error?: { readonly code: string; readonly message: string; readonly throttled: boolean };
}

export type Ec2AttemptObserver = (attempt: Ec2Attempt) => void;

const realClock: BucketClock = { now: () => performance.now(), sleep: (ms) => sleep(ms) };

/** A call throttled this many times (in one call) is worth a warning: the limit is too high. */
const THROTTLED_WARN_AT = 2;

export class LimitedCloud implements Cloud {
  readonly #inner: Cloud;
  readonly #bucket: TokenBucket;
  readonly #clock: BucketClock;
  readonly #random: () => number;
  readonly #newClientToken: () => string;
  readonly #policy: RetryPolicy;
  readonly #log: Logger;
  readonly #tally = new Ec2CallTally();
  readonly #observe: Ec2AttemptObserver;

  constructor(deps: LimitedCloudDeps) {
    const { limit } = deps;
    if (!Number.isInteger(limit.maxAttempts) || limit.maxAttempts < 1) {
      throw new Error(`EC2 max attempts must be a positive integer, got ${limit.maxAttempts}`);
    }
    this.#inner = deps.inner;
    this.#clock = deps.clock ?? realClock;
    this.#bucket = new TokenBucket({ ratePerSecond: limit.qps, burst: limit.burst }, this.#clock);
    this.#random = deps.random ?? Math.random;
    this.#newClientToken = deps.newClientToken ?? randomUUID;
    this.#policy = { ...DEFAULT_RETRY_POLICY, ...deps.retry, maxAttempts: limit.maxAttempts };
    this.#log = deps.log;
    this.#observe = deps.observe ?? (() => {});
  }

  /** What the limiter and the retries did so far, for the agent's state and metrics. */
  figures(): Ec2CallFigures {
    return this.#tally.figures(this.#bucket.available());
  }

  metadata(): Promise<InstanceMetadata> {
    return this.#inner.metadata();
  }

  vpcCidrs(primaryMac: string): Promise<string[]> {
    return this.#inner.vpcCidrs(primaryMac); // IMDS: not EC2's rate limit
  }

  describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    return this.#call('DescribeTrunkInterfaceAssociations', () =>
      this.#inner.describeTrunkAssociations(trunkEniId),
    );
  }

  describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    return this.#call('DescribeNetworkInterfaces', () => this.#inner.describeBranchEnis(eniIds));
  }

  describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    return this.#call('DescribeNetworkInterfaces', () => this.#inner.describeInstanceEnis(instanceId));
  }

  describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    return this.#call('DescribeNetworkInterfaces', () => this.#inner.describeDetachedEnis(tagKey, tagValue));
  }

  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    return this.#call('DescribeSubnets', () => this.#inner.describeSubnets(query));
  }

  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return this.#call('GetSubnetCidrReservations', () => this.#inner.subnetCidrReservations(subnetId));
  }

  describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    return this.#call('DescribeNetworkInterfaces', () => this.#inner.describeSubnetAddressUse(subnetId));
  }

  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    return this.#call('DescribeInstanceTypes', () => this.#inner.instanceTypeLimits(instanceType));
  }

  assignPrivateIps(eniId: string, count: number): Promise<string[]> {
    // Not idempotent: a retry after a lost reply assigns `count` more. The agent's EC2 sync
    // finds the first batch on the ENI and adopts it.
    return this.#call('AssignPrivateIpAddresses', () => this.#inner.assignPrivateIps(eniId, count));
  }

  assignNamedPrivateIps(eniId: string, ips: readonly string[]): Promise<string[]> {
    // Idempotent in effect: a retry after a lost reply is refused (the addresses are in use, by
    // this ENI); the caller then finds them on the ENI through the EC2 sync.
    return this.#call('AssignPrivateIpAddresses', () => this.#inner.assignNamedPrivateIps(eniId, ips));
  }

  unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void> {
    return this.#call('UnassignPrivateIpAddresses', () => this.#inner.unassignPrivateIps(eniId, ips));
  }

  assignIpv4Prefixes(eniId: string, count: number): Promise<string[]> {
    // Not idempotent either: the EC2 sync adopts prefixes a lost reply left on the ENI.
    return this.#call('AssignPrivateIpAddresses', () => this.#inner.assignIpv4Prefixes(eniId, count));
  }

  assignNamedIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<string[]> {
    return this.#call('AssignPrivateIpAddresses', () => this.#inner.assignNamedIpv4Prefixes(eniId, prefixes));
  }

  unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return this.#call('UnassignPrivateIpAddresses', () => this.#inner.unassignIpv4Prefixes(eniId, prefixes));
  }

  assignIpv6Prefixes(eniId: string, count: number): Promise<string[]> {
    // Not idempotent: the IPv6 source describes the ENI before and after, and adopts what it finds.
    return this.#call('AssignIpv6Addresses', () => this.#inner.assignIpv6Prefixes(eniId, count));
  }

  unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return this.#call('UnassignIpv6Addresses', () => this.#inner.unassignIpv6Prefixes(eniId, prefixes));
  }

  createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags?: Readonly<Record<string, string>>,
    clientToken?: string,
    connectionTracking?: ConnectionTracking,
    primaryIp?: string,
  ): Promise<CreatedEni> {
    // One token for the logical call, the same on every attempt: EC2 answers a repeated token
    // with the ENI it already created, so a retry after a lost reply creates nothing twice.
    const token = clientToken ?? this.#newClientToken();
    return this.#call('CreateNetworkInterface', () =>
      this.#inner.createEni(
        subnetId,
        securityGroupIds,
        description,
        tags,
        token,
        connectionTracking,
        primaryIp,
      ),
    );
  }

  attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string> {
    return this.#call('AttachNetworkInterface', () => this.#inner.attachEni(eniId, instanceId, deviceIndex));
  }

  setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void> {
    return this.#call('ModifyNetworkInterfaceAttribute', () =>
      this.#inner.setDeleteOnTermination(eniId, attachmentId),
    );
  }

  detachEni(attachmentId: string): Promise<void> {
    return this.#call('DetachNetworkInterface', () => this.#inner.detachEni(attachmentId));
  }

  deleteEni(eniId: string): Promise<void> {
    return this.#call('DeleteNetworkInterface', () => this.#inner.deleteEni(eniId));
  }

  /** One logical call: a token per attempt, backoff between attempts, bounded in count and time. */
  async #call<T>(action: string, attempt: () => Promise<T>): Promise<T> {
    const startedAt = this.#clock.now();
    const tally = this.#tally;
    tally.called(action);
    let throttledHere = 0;
    for (let n = 1; ; n++) {
      tally.waitedForToken(await this.#bucket.take());
      const sentAt = this.#clock.now();
      try {
        const result = await attempt();
        tally.answered(action, 'ok');
        this.#observe({ action, ms: this.#clock.now() - sentAt });
        return result;
      } catch (err) {
        const throttled = isThrottled(err);
        this.#observe({ action, ms: this.#clock.now() - sentAt, error: attemptError(err, throttled) });
        tally.answered(action, throttled ? 'throttled' : isRetryable(err) ? 'retryable' : 'failed');
        if (throttled && ++throttledHere === THROTTLED_WARN_AT) this.#warnThrottled(action, n);
        const elapsedMs = this.#clock.now() - startedAt;
        const mayRetry = isRetryable(err) && n < this.#policy.maxAttempts;
        const delayMs = mayRetry ? backoffMs(this.#policy, n, this.#random) : 0;
        const again = mayRetry && elapsedMs + delayMs < this.#policy.maxTotalMs;
        if (!again) {
          tally.failed(action);
          throw n > 1 ? withAttempts(err, n, elapsedMs) : err;
        }
        tally.retried(action, delayMs);
        if (delayMs > 0) await this.#clock.sleep(delayMs);
      }
    }
  }

  #warnThrottled(action: string, attempt: number): void {
    const f = this.#tally.figures(this.#bucket.available());
    this.#log.warn('EC2 throttles this agent repeatedly (RequestLimitExceeded); backing off', {
      action,
      attempt,
      throttledTotal: f.throttled,
      throttledInARow: f.throttledInARow,
      hint: 'other clients share the account-wide EC2 limit; lower VPCNET_EC2_QPS if this persists',
    });
  }
}

function attemptError(err: unknown, throttled: boolean): NonNullable<Ec2Attempt['error']> {
  const code = err instanceof CloudError ? err.code : err instanceof Error ? err.name : 'Unknown';
  return { code, message: errorText(err), throttled };
}

/** The last error, saying how many attempts it took (the code and retryability are kept). */
function withAttempts(err: unknown, attempts: number, elapsedMs: number): unknown {
  if (!(err instanceof CloudError)) return err;
  const seconds = (elapsedMs / 1000).toFixed(1);
  return new CloudError(
    `${err.message} (after ${attempts} attempts in ${seconds} s)`,
    err.code,
    err.retryable,
    {
      cause: err,
    },
  );
}
