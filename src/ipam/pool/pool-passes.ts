// One pass of the pool manager: what the pool should do next (grow, give back, drain) and doing
// it, in the order that keeps pods served: an ADD that waits for an address goes first, nothing is
// given back while EC2 throttles, a batched top-up's surplus stays while pods keep arriving, and
// the cluster's releases are spread out (ec2-budget.ts). The manager (pool-manager.ts) discovers
// the ENIs, runs the passes one at a time and lends the addresses.

import { asEc2Class } from '../../cloud/ec2-call-class.ts';
import { type EniPlacement, EniPlacementError } from '../enis/eni-placement.ts';
import type { LeakedEniSweep } from '../enis/leaked-enis.ts';
import type { PrefixPool } from '../prefixes/prefix-pool.ts';
import { slotsUsed, type UnitDecision } from '../prefixes/prefix-targets.ts';
import type { PoolAddresses } from './pool-addresses.ts';
import { type AllocationRate, topUpCount } from './pool-budget.ts';
import type { PoolDrain } from './pool-drain.ts';
import type { PoolGrowth } from './pool-growth.ts';
import type { PoolManagerDeps } from './pool-manager-deps.ts';
import type { PoolParts } from './pool-parts.ts';
import type { PoolShrink } from './pool-shrink.ts';
import { effectiveMaxEnis, nextPoolStep, type PoolDecision, secondaryIpsPerEni } from './targets.ts';
import type { UnschedulableHold } from './unschedulable-hold.ts';

type Step = Exclude<PoolDecision | UnitDecision, { kind: 'none' }>;

function isModeCleanUp(d: PoolDecision | UnitDecision): boolean {
  return 'modeCleanUp' in d && d.modeCleanUp === true;
}

function isGrowth(d: PoolDecision | UnitDecision): d is PoolDecision & { kind: 'assign' | 'attachEni' } {
  return d.kind === 'assign' || d.kind === 'attachEni';
}

/** The manager's parts a pass works with. */
export interface PassParts {
  readonly deps: PoolManagerDeps;
  readonly parts: PoolParts;
  readonly growth: PoolGrowth;
  readonly shrink: PoolShrink;
  readonly prefixes: PrefixPool;
  readonly drain: PoolDrain;
  readonly addresses: PoolAddresses;
  readonly sweep: LeakedEniSweep;
  readonly cordon: UnschedulableHold;
  readonly allocations: AllocationRate;
  /** False: the pool lends what is attached and changes nothing in EC2. */
  readonly provisioning: boolean;
}

export class PoolPasses {
  readonly #p: PassParts;
  /** Since when a growth step runs (its EC2 calls may wait for tokens). */
  #growingSince: number | undefined;
  /** A top-up asked for more than the targets' shortfall, and the pool has not shrunk since. */
  #batched = false;

  constructor(parts: PassParts) {
    this.#p = parts;
  }

  get growingSince(): number | undefined {
    return this.#growingSince;
  }

  /** Attached ENIs, managed or not: every one occupies a device slot. */
  attachedEniCount(): number {
    return this.#p.parts.registry.attachedCount();
  }

  /**
   * What nextPoolStep() (or, with prefixes, prefixStep()) says for the lending ENIs as they are
   * now; when that does not grow the pool, what draining asks for comes first.
   */
  decision(): PoolDecision | UnitDecision {
    const { deps, parts, prefixes, addresses, drain } = this.#p;
    if (!this.#p.provisioning) return { kind: 'none' };
    const { pool, limits, targets, clock } = deps;
    const freeable = parts.registry.freeable();
    // Ownership: an ENI that a recorded attachment names is in use, whatever the pool shows
    // (a stale DescribeNetworkInterfaces at start may have left that attachment's address out).
    // Asked per ENI of an index, not by listing every attachment: this runs on every ADD.
    for (const eniId of freeable) if (deps.ledger?.eniHeld(eniId)) freeable.delete(eniId);
    const lending = pool.eniStats(clock.now()).filter((s) => s.draining !== true);
    const step =
      prefixes.decision(this.attachedEniCount(), freeable) ??
      nextPoolStep(lending, limits, targets, this.attachedEniCount(), freeable, addresses.waiting);
    if (step.kind === 'assign' || step.kind === 'attachEni') return step;
    return drain.step(freeable) ?? step;
  }

  /**
   * Whether the pool could still add an address: provisioning on, and an ENI with a free slot or a
   * device slot for another ENI (what readiness calls the node's room to grow).
   */
  roomToGrow(): boolean {
    if (!this.#p.provisioning) return false;
    const { limits, targets, pool, clock } = this.#p.deps;
    if (this.attachedEniCount() < effectiveMaxEnis(limits, targets)) return true;
    const perEni = secondaryIpsPerEni(limits);
    if (this.#p.prefixes.enabled) return this.#p.prefixes.slots().some((e) => slotsUsed(e) < perEni);
    return pool.eniStats(clock.now()).some((s) => s.total < perEni && s.draining !== true);
  }

  /** One pass: finish half-done ENI set-up and deletes, expire cooldowns, then apply one decision. */
  async run(): Promise<PoolDecision> {
    const { deps, growth, shrink, sweep, drain, addresses, cordon, provisioning } = this.#p;
    // Demand first: while an ADD waits for an address, growth goes before the housekeeping below
    // (which the next pass, at once after this one, does), and its EC2 calls before any other.
    if (addresses.waiting > 0 && provisioning) {
      await growth.configurePending();
      addresses.expireCooling();
      const decision = this.decision();
      if (isGrowth(decision)) {
        if (await cordon.holds(decision.kind)) return { kind: 'none' };
        return asEc2Class('demand', () => this.#act(decision));
      }
    }
    // While EC2 throttles, nothing is given back: no release, detach or delete is even sent.
    const releasing = provisioning && deps.ec2Budget?.releasesHeld() === undefined;
    if (provisioning) await growth.retryDeleteOnTermination();
    if (releasing) {
      await shrink.resumeDetaches();
      await shrink.retryEniDeletes();
      await asEc2Class('sweep', () => sweep.runIfDue());
    }
    await growth.configurePending();
    await drain.refreshIfDue();
    addresses.expireCooling();
    const decision = this.decision();
    if (decision.kind === 'none') return decision;
    if (!isGrowth(decision) && !releasing) return { kind: 'none' };
    if (decision.kind === 'release' && !isModeCleanUp(decision)) {
      // The surplus of a batched top-up stays while pods keep taking addresses.
      if (this.#batched && !this.#p.allocations.quiet()) return { kind: 'none' };
      // The cluster's releases of surplus are spread out: this agent begins one at its turn
      // (ec2-budget.ts). A mode's clean-up is not surplus: until it is done, new pods would take
      // the other mode's addresses and the pool would not grow in its own.
      if ((deps.ec2Budget?.releaseTurnInMs?.() ?? 0) > 0) return { kind: 'none' };
    }
    if (decision.kind === 'release') this.#batched = false;
    if (await cordon.holds(decision.kind)) return { kind: 'none' };
    return this.#act(decision);
  }

  /**
   * Why an ADD found no address in `timeoutMs`: the node's capacity and use, and what holds the
   * growth back (provisioning off, the EC2 budget, the last pass's error, the limits).
   */
  exhaustedMessage(timeoutMs: number, budgetWait: string | undefined, lastError: string | undefined): string {
    const { pool, limits, targets, clock } = this.#p.deps;
    const stats = pool.stats(clock.now());
    const max = effectiveMaxEnis(limits, targets);
    const capacity = `${this.attachedEniCount()}/${max} ENIs × ${secondaryIpsPerEni(limits)} secondary IPs`;
    let msg = `no free address after ${timeoutMs} ms: ${capacity}, ${stats.assigned} in use, ${stats.cooling} cooling`;
    const configuring = this.#p.parts.registry.inState('configuring').length;
    if (configuring > 0) msg += `, ${configuring} ENI(s) attached but not configured`;
    if ((stats.unconfirmed ?? 0) > 0)
      msg += `, ${stats.unconfirmed} waiting for a second read of the ENIs before they are lent`;
    if (!this.#p.provisioning)
      msg += '; ENI provisioning is off: the pool lends only what is attached to the node';
    else if (budgetWait !== undefined) msg += `; ${budgetWait}`;
    else if (lastError !== undefined) msg += `; last pool error: ${lastError}`;
    else if (this.decision().kind === 'none') msg += '; the pool is at its limits';
    return msg;
  }

  /**
   * For prefixes: an ENI in a subnet outside `avoid` (those without a free /28 lately), if a device
   * slot is left and the placement offers such a subnet; its ID, else undefined.
   */
  async attachOutside(avoid: ReadonlySet<string>): Promise<string | undefined> {
    const { limits, targets } = this.#p.deps;
    if (this.attachedEniCount() >= effectiveMaxEnis(limits, targets)) return undefined;
    let placement: EniPlacement;
    try {
      placement = await this.#p.parts.placement.next({ avoidSubnets: avoid });
    } catch (err) {
      if (err instanceof EniPlacementError) return undefined;
      throw err;
    }
    if (avoid.has(placement.subnetId)) return undefined;
    return this.#p.growth.attachAt(placement);
  }

  async #act(decision: Step): Promise<PoolDecision> {
    const growing = isGrowth(decision);
    const ended = this.#p.deps.observer?.actionStarted?.(growing ? 'grow' : 'shrink');
    if (growing) this.#growingSince = this.#p.deps.clock.now();
    try {
      return await this.#apply(decision);
    } finally {
      if (growing) this.#growingSince = undefined;
      ended?.();
    }
  }

  #apply(decision: Step): Promise<PoolDecision> {
    const { growth, shrink, prefixes, drain } = this.#p;
    switch (decision.kind) {
      case 'assign':
        return 'unit' in decision ? prefixes.assign(decision) : growth.assign(this.#topUp(decision.count));
      case 'attachEni':
        return growth.attachEni({ avoidSubnets: prefixes.subnetsWithoutPrefixes() });
      case 'drain':
        return drain.drain(decision.eniId);
      case 'release':
        return 'unit' in decision ? prefixes.release(decision) : shrink.releaseExcess(decision.count);
      case 'freeEni':
        return shrink.freeEni(decision.eniId);
    }
  }

  /** Secondary IPs to ask for when the targets are short of `short` (pool-budget.ts). */
  #topUp(short: number): number {
    const count = topUpCount({
      short,
      waiting: this.#p.addresses.waiting,
      allocationsPerSecond: this.#p.allocations.perSecond(),
      callsPerSecond: this.#p.deps.ec2Budget?.rate('AssignPrivateIpAddresses'),
    });
    if (count > short) this.#batched = true;
    return count;
  }
}
