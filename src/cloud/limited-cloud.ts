// Every EC2 call of one agent through its EC2 budget (ec2-budget.ts: a rate per action learnt
// from EC2's throttling, under the operator's ceilings, most urgent calls first), retried when EC2
// throttles or fails in a way worth retrying. A decorator: it wraps any Cloud (AwsCloud in
// vpcnetd, a fake in tests). IMDS (metadata) is not EC2 and is not limited by it: it passes
// straight through. Describes asked again while one like them still waits for its token share
// that one call; instance types (which never change) and subnets (for a few seconds) are cached.
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
import { Ec2Budget, type Ec2BudgetOptions, Ec2BudgetRefusal, type TokenWait } from './ec2-budget.ts';
import { ec2CallClass } from './ec2-call-class.ts';
import { type Ec2CallFigures, Ec2CallTally } from './ec2-call-figures.ts';
import { backoffMs, DEFAULT_RETRY_POLICY, isRetryable, isThrottled, type RetryPolicy } from './ec2-retry.ts';
import type { BucketClock } from './token-bucket.ts';

export interface Ec2RateLimit {
  /** The ceiling of EC2 calls per second, per action and in all (fractional allowed). */
  readonly qps: number;
  /** Calls that may go at once after a quiet time (the ceiling's bucket). */
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
  /** The cluster-wide throttle signal (the throttle Lease); default none. */
  readonly fleet?: Ec2BudgetOptions['fleet'];
  /** The budget's AIMD tuning and release hold; default ec2-lane.ts's and a minute. */
  readonly tuning?: Ec2BudgetOptions['tuning'];
  readonly releaseHoldMs?: number;
}

/** What the pool asks the budget: is a call waiting for a token, may releases go. */
export interface Ec2BudgetView {
  /** The most urgent EC2 call waiting for a token, if any. */
  waiting(): TokenWait | undefined;
  /** Why releases are not sent now (EC2 throttles), or undefined. */
  releasesHeld(): string | undefined;
  /** The calls per second the budget allows `action` now. */
  rate(action: string): number;
  /** An ADD waits for an address: the pool's calls waiting for a token go as its demand. */
  demandWaits?(): void;
  /** ms until this agent's next turn to begin a release under the cluster's pace (0: now). */
  releaseTurnInMs?(): number;
  /** The pool says whether an ADD waits for an address now: the pool's calls then go as demand. */
  watchDemand?(probe: () => boolean): void;
  /** The agent starts: its calls go as demand (its start is what pods wait for) until started(). */
  starting?(): void;
  started?(): void;
}

/** One request to EC2 (an attempt of a call), as it was answered. */
export interface Ec2Attempt {
  readonly action: string;
  /** 1 for a call's first request, 2 for its first retry, and so on. */
  readonly attempt?: number;
  /** From sending the request to its answer (the token wait excluded), ms. */
  readonly ms: number;
  /** Absent when EC2 answered with success. */
  readonly error?: { readonly code: string; readonly message: string; readonly throttled: boolean };
}

export type Ec2AttemptObserver = (attempt: Ec2Attempt) => void;

/**
 * Timers that keep the process alive while a call waits for its token (an agent starting up may
 * have nothing else running yet: with unreferenced timers Node would exit there), and that close()
 * ends, so a stopped agent leaves no timer behind.
 */
function realClock(stopped: AbortSignal): BucketClock {
  return {
    now: () => performance.now(),
    sleep: (ms) =>
      sleep(ms, undefined, { signal: stopped }).catch((err: unknown) => {
        if (!stopped.aborted) throw err;
      }),
  };
}

/** A call throttled this many times (in one call) is worth a warning: the limit is too high. */
const THROTTLED_WARN_AT = 2;

export class LimitedCloud implements Cloud, Ec2BudgetView {
  readonly #inner: Cloud;
  readonly #budget: Ec2Budget;
  readonly #clock: BucketClock;
  readonly #stopped = new AbortController();
  readonly #random: () => number;
  readonly #newClientToken: () => string;
  readonly #policy: RetryPolicy;
  readonly #log: Logger;
  readonly #tally = new Ec2CallTally();
  readonly #observe: Ec2AttemptObserver;
  /** Describes waiting for their token, by what they ask: a caller asking the same joins one. */
  readonly #queued = new Map<string, Promise<unknown>>();
  readonly #instanceTypes = new Map<string, Promise<InstanceTypeLimits>>();

  constructor(deps: LimitedCloudDeps) {
    const { limit } = deps;
    if (!Number.isInteger(limit.maxAttempts) || limit.maxAttempts < 1) {
      throw new Error(`EC2 max attempts must be a positive integer, got ${limit.maxAttempts}`);
    }
    this.#inner = deps.inner;
    this.#clock = deps.clock ?? realClock(this.#stopped.signal);
    this.#random = deps.random ?? Math.random;
    this.#budget = new Ec2Budget({
      ceiling: { qps: limit.qps, burst: limit.burst },
      clock: this.#clock,
      random: this.#random,
      ...(deps.fleet === undefined ? {} : { fleet: deps.fleet }),
      ...(deps.tuning === undefined ? {} : { tuning: deps.tuning }),
      ...(deps.releaseHoldMs === undefined ? {} : { releaseHoldMs: deps.releaseHoldMs }),
    });
    this.#newClientToken = deps.newClientToken ?? randomUUID;
    this.#policy = { ...DEFAULT_RETRY_POLICY, ...deps.retry, maxAttempts: limit.maxAttempts };
    this.#log = deps.log;
    this.#observe = deps.observe ?? (() => {});
  }

  /** What the budget and the retries did so far, for the agent's state and metrics. */
  figures(): Ec2CallFigures {
    return {
      ...this.#tally.figures(this.#budget.ceilingTokens()),
      lanes: this.#budget.lanes(),
      ...optional('waiting', this.#budget.waiting()),
      ...optional('releasesHeld', this.#budget.releasesHeld()),
    };
  }

  waiting(): TokenWait | undefined {
    return this.#budget.waiting();
  }

  releasesHeld(): string | undefined {
    return this.#budget.releasesHeld();
  }

  rate(action: string): number {
    return this.#budget.rate(action);
  }

  demandWaits(): void {
    this.#budget.demandWaits();
  }

  releaseTurnInMs(): number {
    return this.#budget.releaseTurnInMs();
  }

  watchDemand(probe: () => boolean): void {
    this.#budget.watchDemand(probe);
  }

  starting(): void {
    this.#budget.starting();
  }

  started(): void {
    this.#budget.started();
  }

  /** Refuses the calls waiting for a token and every later one: the agent stops. */
  close(reason = 'the agent is stopping'): void {
    this.#budget.close(reason);
    this.#stopped.abort();
  }

  metadata(): Promise<InstanceMetadata> {
    return this.#inner.metadata();
  }

  vpcCidrs(primaryMac: string): Promise<string[]> {
    return this.#inner.vpcCidrs(primaryMac); // IMDS: not EC2's rate limit
  }

  describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    return this.#describe('DescribeTrunkInterfaceAssociations', trunkEniId, () =>
      this.#inner.describeTrunkAssociations(trunkEniId),
    );
  }

  describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    return this.#describe('DescribeNetworkInterfaces', `branch ${eniIds.join(',')}`, () =>
      this.#inner.describeBranchEnis(eniIds),
    );
  }

  describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    return this.#describe('DescribeNetworkInterfaces', `instance ${instanceId}`, () =>
      this.#inner.describeInstanceEnis(instanceId),
    );
  }

  describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    return this.#describe('DescribeNetworkInterfaces', `detached ${tagKey}=${tagValue}`, () =>
      this.#inner.describeDetachedEnis(tagKey, tagValue),
    );
  }

  /**
   * Coalesced as the other describes, never answered from memory: a subnet's tags decide where
   * the next ENI goes, and an operator who tags a subnet expects the next ENI to see it.
   */
  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    return this.#describe('DescribeSubnets', JSON.stringify(query), () => this.#inner.describeSubnets(query));
  }

  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return this.#call('GetSubnetCidrReservations', () => this.#inner.subnetCidrReservations(subnetId));
  }

  describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    return this.#call('DescribeNetworkInterfaces', () => this.#inner.describeSubnetAddressUse(subnetId));
  }

  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    // An instance type's limits never change: asked once per agent, whoever asks.
    let known = this.#instanceTypes.get(instanceType);
    if (known === undefined) {
      known = this.#call('DescribeInstanceTypes', () => this.#inner.instanceTypeLimits(instanceType));
      known.catch(() => this.#instanceTypes.delete(instanceType));
      this.#instanceTypes.set(instanceType, known);
    }
    return known;
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

  /**
   * A describe: one asked the same way while this one still waits for its token joins it (it
   * will be sent after both asked, so its answer is as fresh as either needs).
   */
  #describe<T>(action: string, what: string, attempt: () => Promise<T>): Promise<T> {
    const key = `${action} ${what}`;
    const queued = this.#queued.get(key);
    if (queued !== undefined) return queued as Promise<T>;
    const call = this.#call(action, attempt, () => {
      if (this.#queued.get(key) === call) this.#queued.delete(key);
    });
    this.#queued.set(key, call);
    call.catch(() => {
      if (this.#queued.get(key) === call) this.#queued.delete(key);
    });
    return call;
  }

  /**
   * One logical call: a token of the budget per attempt; a throttled attempt is retried when its
   * lane (paused, jittered) gives the next token, until the time bound; another retryable one after
   * a backoff, bounded in count and time. `sending` is told when the first attempt got its token.
   */
  async #call<T>(action: string, attempt: () => Promise<T>, sending?: () => void): Promise<T> {
    const startedAt = this.#clock.now();
    const tally = this.#tally;
    const cls = this.#budget.classOf(ec2CallClass(action));
    tally.called(action);
    let throttledHere = 0;
    for (let n = 1; ; n++) {
      try {
        tally.waitedForToken(await this.#budget.acquire(action, cls));
      } catch (err) {
        tally.failed(action);
        throw err instanceof Ec2BudgetRefusal && n > 1
          ? withAttempts(err, n - 1, this.#clock.now() - startedAt)
          : err;
      }
      if (n === 1) sending?.();
      const sentAt = this.#clock.now();
      try {
        const result = await attempt();
        this.#budget.answered(action, sentAt, false, cls);
        tally.answered(action, 'ok');
        this.#observe({ action, attempt: n, ms: this.#clock.now() - sentAt });
        return result;
      } catch (err) {
        const throttled = isThrottled(err);
        this.#budget.answered(action, sentAt, throttled, cls);
        this.#observe({
          action,
          attempt: n,
          ms: this.#clock.now() - sentAt,
          error: attemptError(err, throttled),
        });
        tally.answered(action, throttled ? 'throttled' : isRetryable(err) ? 'retryable' : 'failed');
        if (throttled && ++throttledHere === THROTTLED_WARN_AT) this.#warnThrottled(action, n);
        const elapsedMs = this.#clock.now() - startedAt;
        // Throttling is EC2 saying "later", not "no": a throttled call keeps its turn in its lane
        // (whose rate halved) until the time bound; the attempt count bounds the other failures.
        const failedAttempts = n - throttledHere;
        const mayRetry = isRetryable(err) && (throttled || failedAttempts < this.#policy.maxAttempts);
        // The throttled lane paused itself (jittered): its next token is the wait.
        const delayMs = mayRetry && !throttled ? backoffMs(this.#policy, n, this.#random) : 0;
        const startsInMs = throttled ? this.#budget.readyInMs(action) : delayMs;
        const again = mayRetry && elapsedMs + startsInMs < this.#policy.maxTotalMs;
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
    const f = this.#tally.figures(this.#budget.ceilingTokens());
    this.#log.warn('EC2 throttles this agent repeatedly (RequestLimitExceeded); backing off', {
      action,
      attempt,
      throttledTotal: f.throttled,
      throttledInARow: f.throttledInARow,
      ratePerSecond: this.#budget.lanes()[action]?.rate,
      hint: 'the agent halves its rate for this action at each throttling and climbs back while EC2 answers; other clients share the account-wide EC2 limit',
    });
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export function attemptError(err: unknown, throttled: boolean): NonNullable<Ec2Attempt['error']> {
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
