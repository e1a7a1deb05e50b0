// Shrinking the pool: excess free addresses go back to the cloud, and idle ENIs vpcnet created are
// detached and deleted (ready → detaching → deletePending → deleted). Anything that fails on the
// way puts the ENI back (configuring → ready) and a later pass retries. Each step is in the ledger
// before its cloud call (pending-enis.ts), so a restart finishes a detach or delete it finds there.

import { CloudError } from '../../cloud/cloud.ts';
import { isThrottled } from '../../cloud/ec2-retry.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolParts } from './pool-parts.ts';
import type { PoolDecision } from './targets.ts';

export class PoolShrink {
  readonly #p: PoolParts;
  readonly #configure: (eniId: string) => Promise<void>;

  /** `configure` takes an ENI from configuring back to ready (the growth side's configure()). */
  constructor(parts: PoolParts, configure: (eniId: string) => Promise<void>) {
    this.#p = parts;
    this.#configure = configure;
  }

  /** Gives up to `count` available addresses of one ENI back to the cloud. */
  async releaseExcess(count: number): Promise<PoolDecision> {
    const { pool, cloud, clock, log } = this.#p;
    const pick = pool.excessFree(count, clock.now());
    if (!pick) return { kind: 'none' };
    const eniId = pick.eni.eniId;
    // Out of the pool before the cloud call, so no ADD can take an address being given back.
    pool.removeAddresses(eniId, pick.ips);
    try {
      await cloud.unassignPrivateIps(eniId, pick.ips);
    } catch (err) {
      // Lendable again only when EC2 certainly did not apply the call. After a 5xx, a timeout or
      // "not assigned" (a retry of a call that had succeeded) the addresses may be gone: lent, a
      // pod's traffic would be dropped. They come back held back (counted on the ENI, so a top-up
      // never asks for more than EC2 would allow; never lent): the EC2 sync lends them once two
      // reads a stale window apart list them, and drops them when EC2 no longer does.
      const notApplied =
        isThrottled(err) ||
        (err instanceof CloudError && !err.retryable && !err.code.startsWith('InvalidParameter'));
      pool.addAddresses(eniId, pick.ips, { unconfirmed: !notApplied });
      if (!notApplied)
        log.warn('release of addresses has an unknown outcome; held back until EC2 is read again', {
          eni: eniId,
          ips: pick.ips,
          error: cloudErrorText(err),
        });
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
  async freeEni(eniId: string): Promise<PoolDecision> {
    const { pool, clock, log, registry, journal } = this.#p;
    const entry = registry.get(eniId);
    const stats = pool.eniStats(clock.now()).find((s) => s.eniId === eniId);
    // Decided in this same turn, so this holds; checked anyway, as it is what makes freeing safe.
    if (!entry?.eni || !registry.freeable().has(eniId)) return { kind: 'none' };
    if (!stats || stats.assigned > 0 || stats.cooling > 0) return { kind: 'none' };
    const eni = { ...entry.eni, secondaryIps: [...pool.addresses(eniId).keys()] };
    pool.removeEni(eniId);
    registry.transition(eniId, 'detaching', eni);
    try {
      await journal.detaching(eniId, eni.attachmentId);
    } catch (err) {
      await this.#restore(eniId);
      throw new Error(`cannot free ENI ${eniId}: cannot record it in the ledger: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    log.info('freeing idle ENI', {
      eni: eniId,
      device: eni.deviceNumber,
      addresses: eni.secondaryIps.length,
    });
    try {
      await this.#p.links.onEniDetaching?.(eni);
    } catch (err) {
      await this.#restore(eniId);
      throw new Error(`cannot free ENI ${eniId}: its link teardown failed: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    try {
      await this.#p.cloud.detachEni(eni.attachmentId);
    } catch (err) {
      // Already detached (e.g. an earlier call timed out after it succeeded) counts as detached.
      if (!(err instanceof CloudError && err.code === 'InvalidAttachmentID.NotFound')) {
        await this.#restore(eniId);
        throw new Error(
          `cannot detach ENI ${eniId} (attachment ${eni.attachmentId}): ${cloudErrorText(err)}`,
          { cause: err },
        );
      }
    }
    // Detached, it no longer goes away with the instance: deleted now, or retried until it is.
    registry.transition(eniId, 'deletePending');
    await journal.deleting(eniId);
    log.info('detached ENI', { eni: eniId, device: eni.deviceNumber, attachmentId: eni.attachmentId });
    await this.retryEniDeletes();
    return { kind: 'freeEni', eniId };
  }

  /**
   * Finishes the detaches a restart found in the ledger: the link torn down (if EC2 still lists the
   * ENI attached), the attachment detached (already detached counts), then the delete. A failure
   * leaves the ENI detaching for the next pass: vpcnet had decided to free it.
   */
  async resumeDetaches(): Promise<void> {
    const { registry, cloud, log, journal } = this.#p;
    for (const entry of registry.inState('detaching')) {
      const { eniId, attachmentId } = entry;
      if (attachmentId === undefined) continue;
      try {
        if (entry.eni) await this.#p.links.onEniDetaching?.(entry.eni);
        await cloud.detachEni(attachmentId).catch((err: unknown) => {
          if (!(err instanceof CloudError && err.code === 'InvalidAttachmentID.NotFound')) throw err;
        });
      } catch (err) {
        log.warn('cannot finish detaching ENI yet; will retry', {
          eni: eniId,
          attachmentId,
          error: cloudErrorText(err),
        });
        continue;
      }
      registry.transition(eniId, 'deletePending');
      await journal.deleting(eniId);
      log.info('detached ENI', { eni: eniId, attachmentId, resumed: true });
    }
  }

  /** Deletes every ENI whose delete is pending (detached, or created but never attached). */
  async retryEniDeletes(): Promise<void> {
    const { registry, cloud, log } = this.#p;
    for (const { eniId } of registry.inState('deletePending')) {
      try {
        await cloud.deleteEni(eniId);
      } catch (err) {
        if (!(err instanceof CloudError && err.code === 'InvalidNetworkInterfaceID.NotFound')) {
          // E.g. InvalidNetworkInterface.InUse while EC2 finishes the detach.
          log.warn('cannot delete detached ENI yet; will retry', { eni: eniId, error: cloudErrorText(err) });
          continue;
        }
      }
      registry.forget(eniId);
      await this.#p.journal.done(eniId);
      log.info('deleted ENI', { eni: eniId });
    }
  }

  /** Puts an ENI that could not be freed back: link configured again, then into the pool. */
  async #restore(eniId: string): Promise<void> {
    this.#p.registry.transition(eniId, 'configuring');
    await this.#p.journal.done(eniId);
    try {
      await this.#configure(eniId);
    } catch (err) {
      // It stays configuring: the next pass tries again.
      this.#p.log.error('ENI kept but its link could not be configured again; will retry', {
        eni: eniId,
        error: cloudErrorText(err),
      });
    }
  }
}
