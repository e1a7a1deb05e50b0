// The pool manager keeps the node's warm pool at its targets by talking to the cloud in the
// background, so that an ADD allocates from memory and never waits on EC2 while the pool has
// a free address. Only an empty pool makes a caller wait (waitForAddress), and then with a
// deadline and an error that names the limit it ran into.
//
// Each ENI has one lifecycle state in the registry (eni-registry.ts); growing (pool-growth.ts) and
// shrinking (pool-shrink.ts) move ENIs between states; ENIs of subnets their tags exclude drain
// (pool-drain.ts); the addresses ADD and DEL use, and their cooldown records, are
// pool-addresses.ts. This file discovers ENIs and runs the passes.

import type { EniInfo } from '../../cloud/cloud.ts';
import { PeriodicLoop } from '../../infra/periodic.ts';
import { CensusAssigner } from '../census/census-assigner.ts';
import { placerWantingCensus } from '../census/census-wants.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { CloudSync, type LostEni } from '../cloud-sync/cloud-sync.ts';
import { primarySubnetPlacer } from '../enis/eni-placement.ts';
import { type EniEntry, EniRegistry } from '../enis/eni-registry.ts';
import { DEFAULT_LEAKED_ENI_CLEANUP, LeakedEniSweep } from '../enis/leaked-enis.ts';
import { type EniCreateRecord, EniJournal, type PendingEniRecord } from '../enis/pending-enis.ts';
import { type PrefixModeState, PrefixPool } from '../prefixes/prefix-pool.ts';
import type { UnitDecision } from '../prefixes/prefix-targets.ts';
import { PrefixBook } from '../prefixes/prefixes.ts';
import { type ManagedAddress, PoolAddresses, PoolExhaustedError } from './pool-addresses.ts';
import { AllocationRate, budgetBlocked, budgetWaitText } from './pool-budget.ts';
import { PoolDiscovery } from './pool-discovery.ts';
import { PoolDrain } from './pool-drain.ts';
import { PoolGrowth } from './pool-growth.ts';
import { PoolGrowthHealth } from './pool-growth-health.ts';
import type { PoolHealth, PoolInitOptions, PoolManagerDeps } from './pool-manager-deps.ts';
import type { PoolParts } from './pool-parts.ts';
import { PoolPasses } from './pool-passes.ts';
import { PoolShrink } from './pool-shrink.ts';
import type { PoolDecision } from './targets.ts';
import { UNSCHEDULABLE_REASON, UnschedulableHold } from './unschedulable-hold.ts';

export type { CooldownRecords, ManagedAddress, PoolLedger } from './pool-addresses.ts';
export type { PoolHealth, PoolInitOptions, PoolManagerDeps } from './pool-manager-deps.ts';
export type { PoolLog } from './pool-parts.ts';

export class PoolManager {
  readonly #d: PoolManagerDeps;
  readonly #parts: PoolParts;
  readonly #registry: EniRegistry;
  readonly #journal: EniJournal;
  readonly #sweep: LeakedEniSweep;
  readonly #addresses: PoolAddresses;
  /** Prefixes per ENI; the prefix pool decides while prefix mode is on or any ENI holds one. */
  readonly #book = new PrefixBook();
  readonly #prefixes: PrefixPool;
  readonly #drain: PoolDrain;
  /** Serializes passes and ENI discovery: two concurrent passes could both attach an ENI. */
  #chain: Promise<unknown> = Promise.resolve();
  readonly #loop: PeriodicLoop;
  readonly #sync: CloudSync;
  readonly #growthHealth: PoolGrowthHealth;
  #lastError: string | undefined;
  /** False: the pool lends what is attached and changes nothing in EC2 (no provisioning). */
  readonly #provisioning: boolean;
  /** AWS_MANAGE_ENIS_NON_SCHEDULABLE=false: changes a cordoned node holds back. */
  readonly #cordon: UnschedulableHold;
  /** How fast pods took addresses lately: the size of a top-up, and whether to give any back. */
  readonly #allocations: AllocationRate;
  readonly #passes: PoolPasses;
  readonly #discovery: PoolDiscovery;

  constructor(deps: PoolManagerDeps) {
    this.#d = deps;
    this.#registry = new EniRegistry(deps.clock, deps.minEniLifetimeMs);
    this.#journal = new EniJournal(deps.ledger, deps.clock, deps.log);
    this.#parts = {
      ...deps,
      singles: new CensusAssigner({ ...deps, registry: this.#registry }, deps.census),
      registry: this.#registry,
      links: deps,
      journal: this.#journal,
      eniTags: deps.eniTags ?? {},
      placement: placerWantingCensus(deps.eniPlacement ?? primarySubnetPlacer(deps.metadata), deps.census),
      lendOnlyConfirmed: deps.lendOnlyConfirmed === true,
      manageUntagged: deps.manageUntaggedEnis !== false,
    };
    this.#provisioning = deps.provisioning !== false;
    this.#cordon = new UnschedulableHold(deps.nodeUnschedulable, deps.log, deps.clock);
    this.#allocations = new AllocationRate(() => deps.clock.now());
    this.#sweep = new LeakedEniSweep(this.#parts, deps.leakedEniCleanup ?? DEFAULT_LEAKED_ENI_CLEANUP);
    this.#addresses = new PoolAddresses({
      pool: deps.pool,
      clock: deps.clock,
      log: deps.log,
      ledger: deps.ledger,
      nudge: () => this.nudge(),
      // An ADD waits: the pool's call waiting for an EC2 token (passes run one at a time) goes as demand.
      waiting: () => deps.ec2Budget?.demandWaits?.(),
      stopping: () => this.#loop.stopped,
      exhausted: (ms) => this.#exhausted(ms),
    });
    // While an ADD waits, the pool's EC2 calls are what it waits for (passes run one at a time).
    deps.ec2Budget?.watchDemand?.(() => this.#addresses.waiting > 0);
    const growth = new PoolGrowth(this.#parts, (eniId) => this.#addresses.restoreOn(eniId));
    const shrink = new PoolShrink(this.#parts, (eniId) => growth.configure(eniId));
    this.#prefixes = new PrefixPool(
      this.#parts,
      this.#book,
      deps.prefixMode ?? { enabled: false, warmPrefixTarget: 0 },
      (avoid) => this.#passes.attachOutside(avoid),
    );
    this.#drain = new PoolDrain(this.#parts, this.#book, deps.subnetTagsIntervalMs ?? 300_000);
    this.#growthHealth = new PoolGrowthHealth(deps.log, deps.clock);
    this.#passes = new PoolPasses({
      deps,
      parts: this.#parts,
      growth,
      shrink,
      prefixes: this.#prefixes,
      drain: this.#drain,
      addresses: this.#addresses,
      sweep: this.#sweep,
      cordon: this.#cordon,
      allocations: this.#allocations,
      provisioning: this.#provisioning,
    });
    this.#discovery = new PoolDiscovery({
      deps,
      parts: this.#parts,
      journal: this.#journal,
      book: this.#book,
      growth,
      addresses: this.#addresses,
      drain: this.#drain,
      provisioning: this.#provisioning,
      nudge: () => this.nudge(),
    });
    this.#sync = new CloudSync(this.#parts, this.#addresses, {
      adopt: (described) => this.#discovery.adopt(described),
      prefixes: this.#book,
      serialized: (work) => this.#serialized(work),
      intervalMs: deps.syncIntervalMs ?? 60_000,
      staleWindowMs: deps.staleWindowMs ?? 60_000,
      ...(deps.retryBaseMs === undefined ? {} : { retryBaseMs: deps.retryBaseMs }),
      ...(deps.maxBackoffMs === undefined ? {} : { maxBackoffMs: deps.maxBackoffMs }),
    });
    this.#loop = new PeriodicLoop({
      run: () => this.#loopPass(),
      intervalMs: deps.intervalMs ?? 5000,
      retryBaseMs: deps.retryBaseMs ?? 1000,
      maxBackoffMs: deps.maxBackoffMs ?? 60_000,
      onFailure: (err, failures, retryInMs) => this.#loopFailed(err, failures, retryInMs),
      afterPass: () => this.#afterLoopPass(),
    });
  }

  /**
   * Rebuilds the pool from the ENIs attached to the instance, then assignments and cooldowns from
   * the ledger (pool-discovery.ts). Returns the managed ENIs.
   */
  init(options: PoolInitOptions = {}): Promise<EniInfo[]> {
    return this.#discovery.init(options, () => this.#sync.run());
  }

  /**
   * Describes the instance's ENIs again and registers those attached since (e.g. the trunk a
   * resource controller attaches after start): a trunk or other unmanaged ENI is only recorded; a
   * regular one is configured and joins the pool (a failed link set-up is retried by the passes).
   * Returns the newly found ENIs.
   */
  refreshEnis(): Promise<EniInfo[]> {
    return this.#serialized(async () =>
      this.#discovery.adopt(await this.#d.cloud.describeInstanceEnis(this.#d.metadata.instanceId)),
    );
  }

  /** One comparison of the pool with EC2 (cloud-sync.ts), in line with the passes. */
  syncWithCloud(): Promise<unknown> {
    return this.#sync.run();
  }

  /** Why the pool cannot grow (if it cannot: a growth call waiting for an EC2 token first), the sync's figures, and what drains. */
  health(): PoolHealth {
    const held = this.#d.ec2Budget?.releasesHeld();
    return {
      growth: budgetBlocked(this.#d.ec2Budget, this.#passes.growingSince) ?? this.#growthHealth.state,
      sync: this.#sync.state(),
      prefixes: this.prefixMode(),
      drain: this.#drain.state(),
      provisioning: this.#provisioning,
      ...(held === undefined ? {} : { releasesHeld: held }),
      singles: this.#parts.singles.figures(),
    };
  }

  /** The ENI, if EC2 no longer lists it as attached (CHECK names it for attachments on it). */
  lostEni(eniId: string): LostEni | undefined {
    return this.#sync.lostEni(eniId);
  }

  /**
   * Ownership: the primary IPs of every ENI whose link vpcnet configured or is configuring or
   * tearing down; the reconcile loop must not collect their `from <primary IP>` rules.
   */
  protectedAddresses(): Set<string> {
    return this.#registry.protectedAddresses();
  }

  /** The trunk ENI, if one is attached (found by init or refreshEnis). */
  trunkEni(): EniInfo | undefined {
    return this.#registry.trunk();
  }

  /** Every ENI the manager knows, with its lifecycle state (for introspection and tests). */
  enis(): EniEntry[] {
    return this.#registry.inState('unmanaged', 'configuring', 'ready', 'detaching', 'deletePending');
  }

  /** Attached ENIs, managed or not: every one occupies a device slot. */
  attachedEniCount(): number {
    return this.#passes.attachedEniCount();
  }

  /** ENIs vpcnet detached (or failed to attach) whose deletion is still being retried. */
  pendingEniDeletes(): string[] {
    return this.#registry.inState('deletePending').map((e) => e.eniId);
  }

  /**
   * For the pool's state: leaked ENIs the sweep deleted, ENIs part-way through being created or
   * freed, and creations whose ENI the sweep is looking for.
   */
  eniCleanup(): {
    leakedEnisDeleted: number;
    pendingEnis: readonly PendingEniRecord[];
    createsInDoubt: readonly EniCreateRecord[];
  } {
    return {
      leakedEnisDeleted: this.#sweep.deleted,
      pendingEnis: this.#journal.list(),
      createsInDoubt: this.#journal.createsInDoubt(),
    };
  }

  /** The delegated /28 prefixes an ENI holds, as vpcnet last assigned, released or described them. */
  prefixesOf(eniId: string): readonly string[] {
    return this.#book.prefixesOf(eniId);
  }

  /** Prefix mode, or its fallback to secondary IPs (for the agent's state and metrics). */
  prefixMode(): PrefixModeState & {
    readonly enabled: boolean;
    readonly fallbacks: number;
    readonly censusSkips: number;
  } {
    return {
      ...this.#prefixes.state(),
      enabled: this.#prefixes.enabled,
      fallbacks: this.#prefixes.fallbacks,
      censusSkips: this.#prefixes.censusSkips,
    };
  }

  /** What the pool would do next (pool-passes.ts). */
  decision(): PoolDecision | UnitDecision {
    return this.#passes.decision();
  }

  /** Whether the pool could still add an address (pool-passes.ts). */
  roomToGrow(): boolean {
    return this.#passes.roomToGrow();
  }

  /** One pass: finish half-done ENI set-up and deletes, expire cooldowns, then apply one decision. */
  runPass(): Promise<PoolDecision> {
    return this.#serialized(() => this.#passes.run());
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(work);
    this.#chain = run.catch(() => {});
    return run;
  }

  // ---- background loop ----

  /** Runs passes every intervalMs, at once again after one that changed something, with backoff on failure. */
  start(): void {
    this.#loop.start();
    this.#sync.start();
  }

  /** Runs a pass soon (the pool shrank). Does not cut a backoff short: a throttled API needs the pause. */
  nudge(): void {
    this.#loop.nudge();
  }

  async stop(): Promise<void> {
    const stopping = Promise.all([this.#loop.stop(), this.#sync.stop()]);
    this.#addresses.rejectWaiters(new Error('the agent is stopping'));
    await stopping;
    await this.#chain;
  }

  async #loopPass(): Promise<boolean> {
    const done = await this.runPass();
    const heldSince = this.#cordon.since;
    if (heldSince !== undefined) {
      this.#lastError = UNSCHEDULABLE_REASON;
      this.#growthHealth.held(UNSCHEDULABLE_REASON, heldSince);
      return false;
    }
    this.#lastError = undefined;
    this.#growthHealth.succeeded();
    return done.kind !== 'none';
  }

  #loopFailed(err: unknown, failures: number, retryInMs: number): void {
    this.#lastError = cloudErrorText(err);
    this.#d.log.error('address pool pass failed; retrying', { error: this.#lastError, failures, retryInMs });
    this.#growthHealth.failed(this.#lastError);
    this.#sync.soon(); // the failed call may have changed EC2 all the same
  }

  /** After each pass: wake waiters, and make sure a waiter also wakes when a cooldown ends. */
  #afterLoopPass(): number | undefined {
    this.#addresses.wakeWaiters();
    if (this.#addresses.waiting === 0) return undefined;
    return this.#d.pool.nextCoolingExpiry(this.#d.clock.now());
  }

  // ---- what the agent's ADD/DEL use (the agent's AddressSource) ----

  /** In memory: an address that is neither assigned nor cooling, or the one `owner` already holds. */
  allocate(owner: string): ManagedAddress | undefined {
    const got = this.#addresses.allocate(owner, this.#prefixes.secondChoice());
    if (got !== undefined) this.#allocations.lent();
    if (this.decision().kind !== 'none') this.nudge();
    return got;
  }

  /**
   * A pod's address was freed: it cools down before reuse, and the manager records the cooldown
   * in the ledger (the caller awaits ledger.commit() before it reports success). `eniId`, the ENI
   * the caller's record names, is used only if the pool lost track of the address.
   */
  release(ip: string, eniId?: string): void {
    this.#addresses.release(ip, eniId);
  }

  /** Whether `ip` is one of the pool's addresses, in whatever state (a branch ENI claim may not take it). */
  holds(ip: string): boolean {
    return this.#d.pool.eniIdOf(ip) !== undefined;
  }

  /** An address that never reached a pod (failed fresh ADD): free again at once, no cooldown. */
  unreserve(ip: string): void {
    this.#addresses.unreserve(ip);
  }

  /**
   * Resolves once the pool has an available address (the caller then allocates; another ADD may
   * have won it, so callers loop or fail). Rejects after timeoutMs naming the limits in the way.
   */
  waitForAddress(timeoutMs: number): Promise<void> {
    return this.#addresses.waitForAddress(timeoutMs);
  }

  #exhausted(timeoutMs: number): PoolExhaustedError {
    const budgetWait = budgetWaitText(budgetBlocked(this.#d.ec2Budget, this.#passes.growingSince));
    const message = this.#passes.exhaustedMessage(timeoutMs, budgetWait, this.#lastError);
    return new PoolExhaustedError(message, budgetWait !== undefined);
  }
}
