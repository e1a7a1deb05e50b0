// The pool manager keeps the node's warm pool at its targets by talking to the cloud in the
// background, so that an ADD allocates from memory and never waits on EC2 while the pool has
// a free address. Only an empty pool makes a caller wait (waitForAddress), and then with a
// deadline and an error that names the limit it ran into.

import {
  type Cloud,
  CloudError,
  type EniInfo,
  type InstanceMetadata,
  type InstanceTypeLimits,
} from '../cloud/cloud.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { attachmentKeyString } from '../plan/attachment.ts';
import { vpcAddressOf } from '../plan/resource.ts';
import { AddressWaiters } from './address-waiters.ts';
import { cloudErrorText, createAndAttachEni, createdByVpcnet } from './eni-attach.ts';
import { PassLoop } from './pass-loop.ts';
import type { AddressPool, EniSpec, PoolEni } from './pool.ts';
import {
  effectiveMaxEnis,
  nextPoolStep,
  type PoolDecision,
  secondaryIpsPerEni,
  type WarmPoolTargets,
} from './targets.ts';

type Fields = Record<string, unknown>;

/** The slice of the agent's logger the manager uses. */
export interface PoolLog {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

export interface PoolManagerDeps {
  readonly cloud: Cloud;
  readonly pool: AddressPool;
  readonly clock: { now(): number };
  readonly log: PoolLog;
  readonly metadata: InstanceMetadata;
  readonly limits: InstanceTypeLimits;
  readonly targets: WarmPoolTargets;
  /**
   * Configures the host link of a newly attached ENI (the agent's dataplane). Its addresses
   * enter the pool only after this succeeds; a failure is retried on the next pass.
   */
  readonly onEniAttached?: (eni: EniInfo) => Promise<void>;
  /**
   * Tears down the host link config of an ENI about to be detached (the agent's dataplane). Called
   * after the ENI left the pool and before the cloud detaches it; a failure keeps the ENI.
   */
  readonly onEniDetaching?: (eni: EniInfo) => Promise<void>;
  /** Addresses whose cooldown ended (the ledger may drop their cooling records). */
  readonly onCoolingExpired?: (ips: readonly string[]) => void;
  /** When given, init() restores assignments and cooldowns from it. */
  readonly ledger?: Ledger;
  /** ENIs vpcnet must not take addresses from (e.g. tagged node.k8s.amazonaws.com/no_manage=true, a trunk). */
  readonly isUnmanaged?: (eni: EniInfo) => boolean;
  /** Period of the background loop (default 5 s). */
  readonly intervalMs?: number;
  /** First retry delay after a failed pass (default 1 s), doubled per failure up to maxBackoffMs (default 60 s). */
  readonly retryBaseMs?: number;
  readonly maxBackoffMs?: number;
}

/** A pool address as the agent's ADD needs it. */
export interface ManagedAddress {
  readonly ip: string;
  readonly eniId: string;
  readonly routeTable: number;
  readonly eni: PoolEni;
}

export class PoolManager {
  readonly #d: PoolManagerDeps;
  /** Attached ENIs vpcnet leaves alone (eniId → device number): they still occupy device slots. */
  readonly #unmanaged = new Map<string, number>();
  /** ENIs attached by vpcnet whose link set-up failed; outside the pool until it succeeds. */
  readonly #unconfigured = new Map<string, EniInfo>();
  /** ENIs whose DeleteOnTermination could not be set yet (eniId → attachmentId). */
  readonly #pendingDeleteOnTermination = new Map<string, string>();
  /** Attached ENIs vpcnet created (eniId → ENI): the only ones it may detach and delete. */
  readonly #detachable = new Map<string, EniInfo>();
  /** ENIs vpcnet detached (or failed to attach) but could not delete yet: retried every pass so none is left over. */
  readonly #pendingEniDeletes = new Set<string>();
  readonly #waiters = new AddressWaiters();
  /** Serializes passes: two concurrent passes could both attach an ENI. */
  #chain: Promise<unknown> = Promise.resolve();
  readonly #loop: PassLoop;
  #lastError: string | undefined;

  constructor(deps: PoolManagerDeps) {
    this.#d = deps;
    this.#loop = new PassLoop({
      run: () => this.#loopPass(),
      intervalMs: deps.intervalMs ?? 5000,
      retryBaseMs: deps.retryBaseMs ?? 1000,
      maxBackoffMs: deps.maxBackoffMs ?? 60_000,
      onFailure: (err, failures, retryInMs) => this.#loopFailed(err, failures, retryInMs),
      afterPass: () => this.#afterLoopPass(),
    });
  }

  /**
   * Rebuilds the pool from the ENIs attached to the instance, skipping those vpcnet must not
   * use; returns the managed ENIs (the caller configures their links).
   */
  async init(): Promise<EniInfo[]> {
    const { cloud, pool, metadata, log } = this.#d;
    const enis = await cloud.describeInstanceEnis(metadata.instanceId);
    const managed: EniInfo[] = [];
    for (const eni of [...enis].sort((a, b) => a.deviceNumber - b.deviceNumber)) {
      if (this.#d.isUnmanaged?.(eni)) {
        this.#unmanaged.set(eni.eniId, eni.deviceNumber);
        log.info('ENI not managed by vpcnet; its addresses are left alone', {
          eni: eni.eniId,
          device: eni.deviceNumber,
        });
        continue;
      }
      if (pool.eni(eni.eniId)) continue;
      if (createdByVpcnet(eni)) this.#detachable.set(eni.eniId, eni);
      pool.addEni(specOf(eni));
      pool.addAddresses(eni.eniId, eni.secondaryIps);
      managed.push(eni);
    }
    if (this.#d.ledger) this.#restoreFrom(this.#d.ledger);
    log.info('address pool rebuilt from the cloud', {
      ...pool.stats(this.#d.clock.now()),
      unmanaged: this.#unmanaged.size,
    });
    return managed;
  }

  #restoreFrom(ledger: Ledger): void {
    const { pool, log } = this.#d;
    for (const att of ledger.list()) {
      const ip = vpcAddressOf(att.resources)?.ip;
      if (ip === undefined) continue;
      if (!pool.restoreAssigned(ip, attachmentKeyString(att.key))) {
        log.error('ledger attachment holds an address this node does not have', { key: att.key, ip });
      }
    }
    // Convergence: cooldown survives restarts.
    for (const c of ledger.coolingAddresses()) {
      // A record for an address this node no longer has (or that is held again) protects nothing.
      if (!pool.restoreCooling(c.ip, c.freedAt)) ledger.removeCooling(c.ip);
    }
  }

  /** Attached ENIs, managed or not: every one occupies a device slot. */
  attachedEniCount(): number {
    return this.#d.pool.enis().length + this.#unmanaged.size + this.#unconfigured.size;
  }

  /** ENIs vpcnet detached whose deletion is still being retried. */
  pendingEniDeletes(): string[] {
    return [...this.#pendingEniDeletes];
  }

  /** What nextPoolStep() says for the pool as it is now. */
  decision(): PoolDecision {
    const { pool, limits, targets, clock } = this.#d;
    const detachable = new Set(this.#detachable.keys());
    // Ownership: an ENI that a recorded attachment names is in use, whatever the pool shows
    // (a stale DescribeNetworkInterfaces at start may have left that attachment's address out).
    for (const att of this.#d.ledger?.list() ?? []) {
      const eniId = vpcAddressOf(att.resources)?.eniId;
      if (eniId !== undefined) detachable.delete(eniId);
    }
    return nextPoolStep(pool.eniStats(clock.now()), limits, targets, this.attachedEniCount(), detachable);
  }

  /** One pass: finish half-done ENI set-up, expire cooldowns, then apply one decision. */
  reconcileOnce(): Promise<PoolDecision> {
    const pass = this.#chain.then(() => this.#pass());
    this.#chain = pass.catch(() => {});
    return pass;
  }

  async #pass(): Promise<PoolDecision> {
    await this.#retryDeleteOnTermination();
    await this.#retryEniDeletes();
    for (const eni of [...this.#unconfigured.values()]) await this.#configure(eni);
    this.#expireCooling();
    const decision = this.decision();
    switch (decision.kind) {
      case 'assign':
        return this.#assign(decision.count);
      case 'attachEni':
        return this.#attachEni();
      case 'release':
        return this.#release(decision.count);
      case 'freeEni':
        return this.#freeEni(decision.eniId);
      case 'none':
        return decision;
    }
  }

  #expireCooling(): void {
    const expired = this.#d.pool.expireCooling(this.#d.clock.now());
    if (expired.length === 0) return;
    this.#d.onCoolingExpired?.(expired);
    const ledger = this.#d.ledger;
    if (ledger) {
      for (const ip of expired) ledger.removeCooling(ip);
      // Not needed for safety (an expired record is harmless after a restart), so not awaited.
      ledger
        .commit()
        .catch((err: unknown) => this.#d.log.warn('ledger commit failed', { error: cloudErrorText(err) }));
    }
  }

  async #assign(wanted: number): Promise<PoolDecision> {
    const { pool, cloud, clock, limits } = this.#d;
    const perEni = secondaryIpsPerEni(limits);
    const target = pool.eniStats(clock.now()).find((s) => s.total < perEni);
    if (!target) return { kind: 'none' };
    const count = Math.min(wanted, perEni - target.total);
    let ips: string[];
    try {
      ips = await cloud.assignPrivateIps(target.eniId, count);
    } catch (err) {
      throw new Error(`cannot assign ${count} addresses to ENI ${target.eniId}: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    pool.addAddresses(target.eniId, ips);
    this.#d.log.info('assigned addresses', { eni: target.eniId, ips });
    return { kind: 'assign', count: ips.length };
  }

  #nextDeviceIndex(): number {
    const used = new Set([
      ...this.#d.pool.enis().map((e) => e.deviceNumber),
      ...this.#unmanaged.values(),
      ...[...this.#unconfigured.values()].map((e) => e.deviceNumber),
    ]);
    let index = 1;
    while (used.has(index)) index++;
    return index;
  }

  async #attachEni(): Promise<PoolDecision> {
    const { cloud, metadata, log } = this.#d;
    const eni = await createAndAttachEni(cloud, metadata, this.#nextDeviceIndex(), (eniId, err) => {
      log.warn('cannot delete an ENI that failed to attach yet; will retry', {
        eni: eniId,
        error: cloudErrorText(err),
      });
      this.#pendingEniDeletes.add(eniId);
    });
    log.info('attached ENI', { eni: eni.eniId, device: eni.deviceNumber, attachmentId: eni.attachmentId });
    // As the upstream does: the ENI goes away with the instance. Retried until it sticks.
    this.#pendingDeleteOnTermination.set(eni.eniId, eni.attachmentId);
    this.#detachable.set(eni.eniId, eni);
    await this.#retryDeleteOnTermination();
    await this.#configure(eni);
    return { kind: 'attachEni' };
  }

  async #retryDeleteOnTermination(): Promise<void> {
    for (const [eniId, attachmentId] of [...this.#pendingDeleteOnTermination]) {
      try {
        await this.#d.cloud.setDeleteOnTermination(eniId, attachmentId);
        this.#pendingDeleteOnTermination.delete(eniId);
      } catch (err) {
        this.#d.log.warn('cannot set DeleteOnTermination yet; will retry', {
          eni: eniId,
          error: cloudErrorText(err),
        });
      }
    }
  }

  /** The ENI (with its secondary IPs) is handed out from only once its link is configured. */
  async #configure(eni: EniInfo): Promise<void> {
    try {
      await this.#d.onEniAttached?.(eni);
    } catch (err) {
      this.#unconfigured.set(eni.eniId, eni);
      throw new Error(
        `ENI ${eni.eniId} is attached at device ${eni.deviceNumber} but its link is not configured: ${cloudErrorText(err)}`,
        {
          cause: err,
        },
      );
    }
    this.#unconfigured.delete(eni.eniId);
    this.#d.pool.addEni(specOf(eni));
    this.#d.pool.addAddresses(eni.eniId, eni.secondaryIps);
  }

  async #release(count: number): Promise<PoolDecision> {
    const { pool, cloud, clock, log } = this.#d;
    const pick = pool.excessFree(count, clock.now());
    if (!pick) return { kind: 'none' };
    const eniId = pick.eni.eniId;
    // Out of the pool before the cloud call, so no ADD can take an address being given back.
    pool.removeAddresses(eniId, pick.ips);
    try {
      await cloud.unassignPrivateIps(eniId, pick.ips);
    } catch (err) {
      pool.addAddresses(eniId, pick.ips);
      throw new Error(`cannot release ${pick.ips.length} addresses of ENI ${eniId}: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    log.info('released excess addresses', { eni: eniId, ips: pick.ips });
    return { kind: 'release', count: pick.ips.length };
  }

  /**
   * Detaches and deletes an idle ENI vpcnet created. Out of the pool first, so no ADD can take
   * one of its addresses; then the agent tears down its link; then the cloud calls. If teardown
   * or detach fails, the ENI and its addresses come back (link configured again) and a later
   * pass retries, with the loop's backoff.
   */
  async #freeEni(eniId: string): Promise<PoolDecision> {
    const { pool, clock, log } = this.#d;
    const known = this.#detachable.get(eniId);
    const stats = pool.eniStats(clock.now()).find((s) => s.eniId === eniId);
    // Decided in this same turn, so this holds; checked anyway, as it is what makes freeing safe.
    if (!known || !stats || stats.assigned > 0 || stats.cooling > 0) return { kind: 'none' };
    const ips = [...pool.addresses(eniId).keys()];
    const eni: EniInfo = { ...known, secondaryIps: ips };
    pool.removeEni(eniId);
    log.info('freeing idle ENI', { eni: eniId, device: eni.deviceNumber, addresses: ips.length });
    try {
      await this.#d.onEniDetaching?.(eni);
    } catch (err) {
      await this.#restore(eni);
      throw new Error(`cannot free ENI ${eniId}: its link teardown failed: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    try {
      await this.#d.cloud.detachEni(eni.attachmentId);
    } catch (err) {
      // Already detached (e.g. an earlier call timed out after it succeeded) counts as detached.
      if (!(err instanceof CloudError && err.code === 'InvalidAttachmentID.NotFound')) {
        await this.#restore(eni);
        throw new Error(
          `cannot detach ENI ${eniId} (attachment ${eni.attachmentId}): ${cloudErrorText(err)}`,
          { cause: err },
        );
      }
    }
    this.#detachable.delete(eniId);
    this.#pendingDeleteOnTermination.delete(eniId);
    log.info('detached ENI', { eni: eniId, device: eni.deviceNumber, attachmentId: eni.attachmentId });
    // Detached, it no longer goes away with the instance: deleted now, or retried until it is.
    this.#pendingEniDeletes.add(eniId);
    await this.#retryEniDeletes();
    return { kind: 'freeEni', eniId };
  }

  /** Puts an ENI that could not be freed back: link configured again, then into the pool. */
  async #restore(eni: EniInfo): Promise<void> {
    try {
      await this.#configure(eni);
    } catch (err) {
      // #configure keeps it among the unconfigured ENIs: the next pass tries again.
      this.#d.log.error('ENI kept but its link could not be configured again; will retry', {
        eni: eni.eniId,
        error: cloudErrorText(err),
      });
    }
  }

  async #retryEniDeletes(): Promise<void> {
    for (const eniId of [...this.#pendingEniDeletes]) {
      try {
        await this.#d.cloud.deleteEni(eniId);
      } catch (err) {
        if (!(err instanceof CloudError && err.code === 'InvalidNetworkInterfaceID.NotFound')) {
          // E.g. InvalidNetworkInterface.InUse while EC2 finishes the detach.
          this.#d.log.warn('cannot delete detached ENI yet; will retry', {
            eni: eniId,
            error: cloudErrorText(err),
          });
          continue;
        }
      }
      this.#pendingEniDeletes.delete(eniId);
      this.#d.log.info('deleted ENI', { eni: eniId });
    }
  }

  // ---- background loop ----

  /** Runs passes every intervalMs, at once again after one that changed something, with backoff on failure. */
  start(): void {
    this.#loop.start();
  }

  /** Runs a pass soon (the pool shrank). Does not cut a backoff short: a throttled API needs the pause. */
  nudge(): void {
    this.#loop.nudge();
  }

  async stop(): Promise<void> {
    this.#loop.stop();
    this.#waiters.rejectAll(new Error('the agent is stopping'));
    await this.#chain;
  }

  async #loopPass(): Promise<boolean> {
    const done = await this.reconcileOnce();
    this.#lastError = undefined;
    return done.kind !== 'none';
  }

  #loopFailed(err: unknown, failures: number, retryInMs: number): void {
    this.#lastError = cloudErrorText(err);
    this.#d.log.error('address pool pass failed; retrying', { error: this.#lastError, failures, retryInMs });
  }

  /** After each pass: wake waiters, and make sure a waiter also wakes when a cooldown ends. */
  #afterLoopPass(): number | undefined {
    this.#wakeWaiters();
    return this.#waiters.size > 0 ? this.#d.pool.nextCoolingExpiry(this.#d.clock.now()) : undefined;
  }

  // ---- what the agent's ADD/DEL use (the agent's AddressSource) ----

  /** In memory: an address that is neither assigned nor cooling, or the one `owner` already holds. */
  allocate(owner: string): ManagedAddress | undefined {
    const { pool, clock } = this.#d;
    const got = pool.allocate(owner, clock.now());
    if (this.decision().kind !== 'none') this.nudge();
    if (!got) return undefined;
    // The address may have been a cooled one that no pass expired yet: drop its cooling record.
    if (this.#d.ledger?.removeCooling(got.ip) === true) this.#d.onCoolingExpired?.([got.ip]);
    return { ip: got.ip, eniId: got.eni.eniId, routeTable: got.eni.routeTable, eni: got.eni };
  }

  /** A pod's address was freed: it cools down before reuse. The caller records the cooldown in the ledger. */
  release(ip: string): void {
    this.#d.pool.release(ip, this.#d.clock.now());
    this.nudge();
  }

  /** An address that never reached a pod (failed ADD): free again at once. */
  unreserve(ip: string): void {
    if (this.#d.pool.unreserve(ip)) this.#wakeWaiters();
  }

  /**
   * Resolves once the pool has an available address (the caller then allocates; another ADD may
   * have won it, so callers loop or fail). Rejects after timeoutMs naming the limits in the way.
   */
  waitForAddress(timeoutMs: number): Promise<void> {
    if (this.#available() > 0) return Promise.resolve();
    if (this.#loop.stopped) return Promise.reject(new Error('the agent is stopping'));
    const woken = this.#waiters.wait(timeoutMs, () => new Error(this.#exhaustedMessage(timeoutMs)));
    this.nudge();
    return woken;
  }

  #available(): number {
    return this.#d.pool.stats(this.#d.clock.now()).available;
  }

  #wakeWaiters(): void {
    if (this.#waiters.size > 0 && this.#available() > 0) this.#waiters.wakeAll();
  }

  #exhaustedMessage(timeoutMs: number): string {
    const { pool, limits, targets, clock } = this.#d;
    const stats = pool.stats(clock.now());
    const max = effectiveMaxEnis(limits, targets);
    const attached = this.attachedEniCount();
    const capacity = `${attached}/${max} ENIs × ${secondaryIpsPerEni(limits)} secondary IPs`;
    let msg = `no free address after ${timeoutMs} ms: ${capacity}, ${stats.assigned} in use, ${stats.cooling} cooling`;
    if (this.#unconfigured.size > 0) msg += `, ${this.#unconfigured.size} ENI(s) attached but not configured`;
    if (this.#lastError !== undefined) msg += `; last pool error: ${this.#lastError}`;
    else if (this.decision().kind === 'none') msg += '; the pool is at its limits';
    return msg;
  }
}

function specOf(eni: EniInfo): EniSpec {
  return {
    eniId: eni.eniId,
    mac: eni.mac,
    deviceNumber: eni.deviceNumber,
    subnetId: eni.subnetId,
    primaryIp: eni.primaryIp,
    subnetCidr: eni.subnetCidr,
  };
}
