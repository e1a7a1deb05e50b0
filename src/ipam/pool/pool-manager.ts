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
import { asEc2Class } from '../../cloud/ec2-call-class.ts';
import { PeriodicLoop } from '../../infra/periodic.ts';
import { CensusAssigner } from '../census/census-assigner.ts';
import { placerWantingCensus, wantSubnetsOf } from '../census/census-wants.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { CloudSync, type LostEni } from '../cloud-sync/cloud-sync.ts';
import { adoptEnis } from '../enis/eni-discovery.ts';
import { type EniPlacement, EniPlacementError, primarySubnetPlacer } from '../enis/eni-placement.ts';
import { type EniEntry, EniRegistry } from '../enis/eni-registry.ts';
import { DEFAULT_LEAKED_ENI_CLEANUP, LeakedEniSweep } from '../enis/leaked-enis.ts';
import {
  type EniCreateRecord,
  EniJournal,
  type PendingEniRecord,
  resumePendingEnis,
} from '../enis/pending-enis.ts';
import { type PrefixModeState, PrefixPool } from '../prefixes/prefix-pool.ts';
import { slotsUsed, type UnitDecision } from '../prefixes/prefix-targets.ts';
import { PrefixBook } from '../prefixes/prefixes.ts';
import { type ManagedAddress, PoolAddresses, PoolExhaustedError } from './pool-addresses.ts';
import { AllocationRate, budgetBlocked, budgetWaitText, topUpCount } from './pool-budget.ts';
import { PoolDrain } from './pool-drain.ts';
import { PoolGrowth } from './pool-growth.ts';
import { PoolGrowthHealth } from './pool-growth-health.ts';
import type { PoolHealth, PoolInitOptions, PoolManagerDeps } from './pool-manager-deps.ts';
import type { PoolParts } from './pool-parts.ts';
import { PoolShrink } from './pool-shrink.ts';
import { effectiveMaxEnis, nextPoolStep, type PoolDecision, secondaryIpsPerEni } from './targets.ts';
import { UNSCHEDULABLE_REASON, UnschedulableHold } from './unschedulable-hold.ts';

export type { CooldownRecords, ManagedAddress, PoolLedger } from './pool-addresses.ts';
export type { PoolHealth, PoolInitOptions, PoolManagerDeps } from './pool-manager-deps.ts';
export type { PoolLog } from './pool-parts.ts';

function isModeCleanUp(d: PoolDecision | UnitDecision): boolean {
  return 'modeCleanUp' in d && d.modeCleanUp === true;
}

function isGrowth(d: PoolDecision | UnitDecision): d is PoolDecision & { kind: 'assign' | 'attachEni' } {
  return d.kind === 'assign' || d.kind === 'attachEni';
}

export class PoolManager {
  readonly #d: PoolManagerDeps;
  readonly #parts: PoolParts;
  readonly #registry: EniRegistry;
  readonly #journal: EniJournal;
  readonly #sweep: LeakedEniSweep;
  readonly #growth: PoolGrowth;
  readonly #shrink: PoolShrink;
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
  /** Since when a growth step runs (its EC2 calls may wait for tokens). */
  #growingSince: number | undefined;
  /** A top-up asked for more than the targets' shortfall, and the pool has not shrunk since. */
  #batched = false;

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
    this.#growth = new PoolGrowth(this.#parts, (eniId) => this.#addresses.restoreOn(eniId));
    this.#shrink = new PoolShrink(this.#parts, (eniId) => this.#growth.configure(eniId));
    this.#prefixes = new PrefixPool(
      this.#parts,
      this.#book,
      deps.prefixMode ?? { enabled: false, warmPrefixTarget: 0 },
      (avoid) => this.#attachOutside(avoid),
    );
    this.#drain = new PoolDrain(this.#parts, this.#book, deps.subnetTagsIntervalMs ?? 300_000);
    this.#growthHealth = new PoolGrowthHealth(deps.log, deps.clock);
    this.#sync = new CloudSync(this.#parts, this.#addresses, {
      adopt: (described) => this.#adopt(described),
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
   * Rebuilds the pool from the ENIs attached to the instance (those vpcnet must not use are
   * registered as unmanaged), then assignments and cooldowns from the ledger. Returns the managed
   * ENIs. A half-done ADD's address comes back assigned: release() cools it down.
   */
  async init(options: PoolInitOptions = {}): Promise<EniInfo[]> {
    const { cloud, metadata, log, pool, clock } = this.#d;
    const described = await cloud.describeInstanceEnis(metadata.instanceId);
    // ENIs the ledger records as being created or freed are finished, never adopted into the pool.
    const resumed = await resumePendingEnis(this.#registry, this.#journal, log, described);
    const configure = options.configureLinks === true;
    for (const eni of described) this.#book.learn(eni);
    wantSubnetsOf(this.#d.census, metadata, described);
    const { managed } = adoptEnis(this.#parts, described, configure ? 'configuring' : 'ready');
    for (const eniId of resumed.attachedBeforeStop) this.#registry.deleteOnTerminationNeeded(eniId);
    if (configure) for (const eni of managed) await this.#growth.configure(eni.eniId);
    this.#addresses.restore();
    // Before anything is lent: an ENI whose subnet drains lends nothing from the start.
    await this.#drain.refreshIfDue();
    log.info('address pool rebuilt from the cloud', {
      ...pool.stats(clock.now()),
      unmanaged: this.#registry.inState('unmanaged').length,
    });
    if (!this.#provisioning && this.#journal.list().length > 0) {
      log.warn('ENI provisioning is off: ENIs vpcnet was creating or freeing are left as they are', {
        pendingEnis: this.#journal.list().map((r) => `${r.eniId} (${r.step})`),
      });
    }
    // The read above is one; the comparisons confirm what a later read, the window apart, lists too.
    if (this.#parts.lendOnlyConfirmed) await this.#sync.run();
    return managed;
  }

  /**
   * Describes the instance's ENIs again and registers those attached since (e.g. the trunk a
   * resource controller attaches after start): a trunk or other unmanaged ENI is only recorded; a
   * regular one is configured and joins the pool (a failed link set-up is retried by the passes).
   * Returns the newly found ENIs.
   */
  refreshEnis(): Promise<EniInfo[]> {
    return this.#serialized(async () =>
      this.#adopt(await this.#d.cloud.describeInstanceEnis(this.#d.metadata.instanceId)),
    );
  }

  async #adopt(described: readonly EniInfo[]): Promise<EniInfo[]> {
    const { managed, unmanaged } = adoptEnis(this.#parts, described, 'configuring');
    for (const eni of managed) this.#book.learn(eni);
    wantSubnetsOf(this.#d.census, this.#d.metadata, managed);
    for (const eni of managed) {
      await this.#growth.configure(eni.eniId).catch((err: unknown) =>
        this.#d.log.warn('new ENI attached; its link is not configured yet; will retry', {
          eni: eni.eniId,
          error: cloudErrorText(err),
        }),
      );
    }
    // An ENI found in a drained subnet lends nothing, not even before the next pass.
    this.#drain.apply();
    if (managed.length > 0) this.nudge();
    return [...unmanaged, ...managed];
  }

  /** One comparison of the pool with EC2 (cloud-sync.ts), in line with the passes. */
  syncWithCloud(): Promise<unknown> {
    return this.#sync.run();
  }

  /** Why the pool cannot grow (if it cannot: a growth call waiting for an EC2 token first), the sync's figures, and what drains. */
  health(): PoolHealth {
    const held = this.#d.ec2Budget?.releasesHeld();
    return {
      growth: budgetBlocked(this.#d.ec2Budget, this.#growingSince) ?? this.#growthHealth.state,
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
    return this.#registry.attachedCount();
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

  /**
   * What nextPoolStep() (or, with prefixes, prefixStep()) says for the lending ENIs as they are
   * now; when that does not grow the pool, what draining asks for comes first.
   */
  decision(): PoolDecision | UnitDecision {
    if (!this.#provisioning) return { kind: 'none' };
    const { pool, limits, targets, clock } = this.#d;
    const freeable = this.#registry.freeable();
    // Ownership: an ENI that a recorded attachment names is in use, whatever the pool shows
    // (a stale DescribeNetworkInterfaces at start may have left that attachment's address out).
    // Asked per ENI of an index, not by listing every attachment: this runs on every ADD.
    for (const eniId of freeable) if (this.#d.ledger?.eniHeld(eniId)) freeable.delete(eniId);
    const lending = pool.eniStats(clock.now()).filter((s) => s.draining !== true);
    const step =
      this.#prefixes.decision(this.attachedEniCount(), freeable) ??
      nextPoolStep(lending, limits, targets, this.attachedEniCount(), freeable, this.#addresses.waiting);
    if (step.kind === 'assign' || step.kind === 'attachEni') return step;
    return this.#drain.step(freeable) ?? step;
  }

  /**
   * Whether the pool could still add an address: provisioning on, and an ENI with a free slot or a
   * device slot for another ENI (what readiness calls the node's room to grow).
   */
  roomToGrow(): boolean {
    if (!this.#provisioning) return false;
    const { limits, targets, pool, clock } = this.#d;
    if (this.attachedEniCount() < effectiveMaxEnis(limits, targets)) return true;
    const perEni = secondaryIpsPerEni(limits);
    if (this.#prefixes.enabled) return this.#prefixes.slots().some((e) => slotsUsed(e) < perEni);
    return pool.eniStats(clock.now()).some((s) => s.total < perEni && s.draining !== true);
  }

  /** One pass: finish half-done ENI set-up and deletes, expire cooldowns, then apply one decision. */
  runPass(): Promise<PoolDecision> {
    return this.#serialized(() => this.#pass());
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(work);
    this.#chain = run.catch(() => {});
    return run;
  }

  async #pass(): Promise<PoolDecision> {
    // Demand first: while an ADD waits for an address, growth goes before the housekeeping below
    // (which the next pass, at once after this one, does), and its EC2 calls before any other.
    if (this.#addresses.waiting > 0 && this.#provisioning) {
      await this.#growth.configurePending();
      this.#addresses.expireCooling();
      const decision = this.decision();
      if (isGrowth(decision)) {
        if (await this.#cordon.holds(decision.kind)) return { kind: 'none' };
        return asEc2Class('demand', () => this.#act(decision));
      }
    }
    // While EC2 throttles, nothing is given back: no release, detach or delete is even sent.
    const releasing = this.#provisioning && this.#d.ec2Budget?.releasesHeld() === undefined;
    if (this.#provisioning) await this.#growth.retryDeleteOnTermination();
    if (releasing) {
      await this.#shrink.resumeDetaches();
      await this.#shrink.retryEniDeletes();
      await asEc2Class('sweep', () => this.#sweep.runIfDue());
    }
    await this.#growth.configurePending();
    await this.#drain.refreshIfDue();
    this.#addresses.expireCooling();
    const decision = this.decision();
    if (decision.kind === 'none') return decision;
    if (!isGrowth(decision) && !releasing) return { kind: 'none' };
    if (decision.kind === 'release' && !isModeCleanUp(decision)) {
      // The surplus of a batched top-up stays while pods keep taking addresses.
      if (this.#batched && !this.#allocations.quiet()) return { kind: 'none' };
      // The cluster's releases of surplus are spread out: this agent begins one at its turn
      // (ec2-budget.ts). A mode's clean-up is not surplus: until it is done, new pods would take
      // the other mode's addresses and the pool would not grow in its own.
      if ((this.#d.ec2Budget?.releaseTurnInMs?.() ?? 0) > 0) return { kind: 'none' };
    }
    if (decision.kind === 'release') this.#batched = false;
    if (await this.#cordon.holds(decision.kind)) return { kind: 'none' };
    return this.#act(decision);
  }

  async #act(decision: Exclude<PoolDecision | UnitDecision, { kind: 'none' }>): Promise<PoolDecision> {
    const growing = isGrowth(decision);
    const ended = this.#d.observer?.actionStarted?.(growing ? 'grow' : 'shrink');
    if (growing) this.#growingSince = this.#d.clock.now();
    try {
      return await this.#apply(decision);
    } finally {
      if (growing) this.#growingSince = undefined;
      ended?.();
    }
  }

  #apply(decision: Exclude<PoolDecision | UnitDecision, { kind: 'none' }>): Promise<PoolDecision> {
    switch (decision.kind) {
      case 'assign':
        return 'unit' in decision
          ? this.#prefixes.assign(decision)
          : this.#growth.assign(this.#topUp(decision.count));
      case 'attachEni':
        return this.#growth.attachEni({ avoidSubnets: this.#prefixes.subnetsWithoutPrefixes() });
      case 'drain':
        return this.#drain.drain(decision.eniId);
      case 'release':
        return 'unit' in decision
          ? this.#prefixes.release(decision)
          : this.#shrink.releaseExcess(decision.count);
      case 'freeEni':
        return this.#shrink.freeEni(decision.eniId);
    }
  }

  /** Secondary IPs to ask for when the targets are short of `short` (pool-budget.ts). */
  #topUp(short: number): number {
    const count = topUpCount({
      short,
      waiting: this.#addresses.waiting,
      allocationsPerSecond: this.#allocations.perSecond(),
      callsPerSecond: this.#d.ec2Budget?.rate('AssignPrivateIpAddresses'),
    });
    if (count > short) this.#batched = true;
    return count;
  }

  /**
   * For prefixes: an ENI in a subnet outside `avoid` (those without a free /28 lately), if a device
   * slot is left and the placement offers such a subnet; its ID, else undefined.
   */
  async #attachOutside(avoid: ReadonlySet<string>): Promise<string | undefined> {
    const { limits, targets } = this.#d;
    if (this.attachedEniCount() >= effectiveMaxEnis(limits, targets)) return undefined;
    let placement: EniPlacement;
    try {
      placement = await this.#parts.placement.next({ avoidSubnets: avoid });
    } catch (err) {
      if (err instanceof EniPlacementError) return undefined;
      throw err;
    }
    if (avoid.has(placement.subnetId)) return undefined;
    return this.#growth.attachAt(placement);
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
    const budgetWait = budgetWaitText(budgetBlocked(this.#d.ec2Budget, this.#growingSince));
    const message = this.#exhaustedMessage(timeoutMs, budgetWait);
    return new PoolExhaustedError(message, budgetWait !== undefined);
  }

  #exhaustedMessage(timeoutMs: number, budgetWait: string | undefined): string {
    const { pool, limits, targets, clock } = this.#d;
    const stats = pool.stats(clock.now());
    const max = effectiveMaxEnis(limits, targets);
    const capacity = `${this.attachedEniCount()}/${max} ENIs × ${secondaryIpsPerEni(limits)} secondary IPs`;
    let msg = `no free address after ${timeoutMs} ms: ${capacity}, ${stats.assigned} in use, ${stats.cooling} cooling`;
    const configuring = this.#registry.inState('configuring').length;
    if (configuring > 0) msg += `, ${configuring} ENI(s) attached but not configured`;
    if ((stats.unconfirmed ?? 0) > 0)
      msg += `, ${stats.unconfirmed} waiting for a second read of the ENIs before they are lent`;
    if (!this.#provisioning)
      msg += '; ENI provisioning is off: the pool lends only what is attached to the node';
    else if (budgetWait !== undefined) msg += `; ${budgetWait}`;
    else if (this.#lastError !== undefined) msg += `; last pool error: ${this.#lastError}`;
    else if (this.decision().kind === 'none') msg += '; the pool is at its limits';
    return msg;
  }
}
