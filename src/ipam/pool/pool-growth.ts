// Growing the pool: more secondary IPs on an ENI with room, or a new ENI (created, attached, its
// DeleteOnTermination set, its link configured). An ENI enters the pool only through configure(),
// the one way from `configuring` to `ready`.

import { CloudError, type EniInfo } from '../../cloud/cloud.ts';
import { errorText } from '../../infra/error-text.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { createAndAttachEni } from '../enis/eni-attach.ts';
import {
  type EniPlacement,
  type PlacementOptions,
  SUBNET_SPECIFIC_CREATE_ERRORS,
} from '../enis/eni-placement.ts';
import { lendableAddresses } from '../prefixes/prefixes.ts';
import type { EniSpec } from './pool.ts';
import type { PoolParts } from './pool-parts.ts';
import { type PoolDecision, secondaryIpsPerEni } from './targets.ts';

export class PoolGrowth {
  readonly #p: PoolParts;
  readonly #entered: (eniId: string) => void;

  /** `entered` is told of every ENI whose addresses just entered the pool (to apply the ledger). */
  constructor(parts: PoolParts, entered: (eniId: string) => void) {
    this.#p = parts;
    this.#entered = entered;
  }

  /** Assigns up to `wanted` new secondary IPs to the lowest lending ENI in the pool that has room. */
  async assign(wanted: number): Promise<PoolDecision> {
    const { pool, clock, limits } = this.#p;
    const perEni = secondaryIpsPerEni(limits);
    const target = pool.eniStats(clock.now()).find((s) => s.total < perEni && s.draining !== true);
    if (!target) return { kind: 'none' };
    const count = Math.min(wanted, perEni - target.total);
    let ips: string[];
    try {
      ips = await this.#p.singles.assign(target.eniId, pool.eni(target.eniId)?.subnetId ?? '', count);
    } catch (err) {
      throw new Error(`cannot assign ${count} addresses to ENI ${target.eniId}: ${cloudErrorText(err)}`, {
        cause: err,
      });
    }
    pool.addAddresses(target.eniId, ips);
    this.#p.log.info('assigned addresses', { eni: target.eniId, ips });
    return { kind: 'assign', count: ips.length };
  }

  /**
   * Creates and attaches an ENI at the lowest free device index where the placement says (subnets
   * in `options.avoidSubnets` last), then configures it.
   */
  async attachEni(options: PlacementOptions = {}): Promise<PoolDecision> {
    await this.attachAt(await this.#p.placement.next(options));
    return { kind: 'attachEni' };
  }

  /**
   * Creates and attaches an ENI in the placement's subnet (or its fallbacks, for a reason of the
   * subnet), then configures it; returns its ID. Its ledger record (attaching) goes once the
   * registry has it: from then on the registry and EC2's list of attached ENIs say what it is.
   */
  async attachAt(first: EniPlacement): Promise<string> {
    const { cloud, metadata, log, registry, clock, journal } = this.#p;
    const candidates = [first, ...(first.fallbacks ?? [])];
    const failed: string[] = [];
    let eni: EniInfo | undefined;
    let placement = first;
    for (const [i, candidate] of candidates.entries()) {
      placement = candidate;
      try {
        eni = await createAndAttachEni(cloud, metadata, {
          placement,
          deviceIndex: this.#nextDeviceIndex(),
          createdAtMs: clock.now(),
          tags: this.#p.eniTags,
          ...primaryConnectionTracking(registry),
          primaryIp: this.#p.singles.primaryIpFor(placement.subnetId),
          journal,
          onLeftOver: (eniId, err) => {
            log.warn('cannot delete an ENI that failed to attach yet; will retry', {
              eni: eniId,
              error: cloudErrorText(err),
            });
            registry.addLeftOver(eniId);
            this.#p.observer?.eniLeftOver?.(eniId, err);
          },
        });
        break;
      } catch (err) {
        const code = err instanceof Error && err.cause instanceof CloudError ? err.cause.code : undefined;
        const next = candidates[i + 1];
        if (code === undefined || !SUBNET_SPECIFIC_CREATE_ERRORS.has(code) || next === undefined) {
          if (failed.length === 0) throw err;
          throw new Error(`${failed.join('; ')}; ${errorText(err)}`, { cause: err });
        }
        // Another subnet would not have this reason: the same growth attempt tries the next one.
        failed.push(`subnet ${candidate.subnetId} failed: ${code}`);
        log.warn('cannot create an ENI in this subnet; trying the next candidate', {
          subnet: candidate.subnetId,
          error: code,
          next: next.subnetId,
        });
      }
    }
    if (eni === undefined) throw new Error('no ENI placement to try');
    log.info('attached ENI', {
      eni: eni.eniId,
      device: eni.deviceNumber,
      attachmentId: eni.attachmentId,
      subnet: eni.subnetId,
      placement: placement.reason,
    });
    // As the upstream does: the ENI goes away with the instance. Retried until it sticks.
    registry.add(eni, 'configuring', { createdByVpcnet: true, deleteOnTerminationPending: true });
    await journal.done(eni.eniId);
    await this.retryDeleteOnTermination();
    await this.configure(eni.eniId);
    return eni.eniId;
  }

  async retryDeleteOnTermination(): Promise<void> {
    const { registry, cloud, log } = this.#p;
    for (const entry of registry.inState('configuring', 'ready', 'detaching')) {
      if (!entry.deleteOnTerminationPending || !entry.eni) continue;
      try {
        await cloud.setDeleteOnTermination(entry.eniId, entry.eni.attachmentId);
        registry.deleteOnTerminationSet(entry.eniId);
      } catch (err) {
        log.warn('cannot set DeleteOnTermination yet; will retry', {
          eni: entry.eniId,
          error: cloudErrorText(err),
        });
      }
    }
  }

  /** Configures every ENI still waiting for its link; stops at the first failure (retried next pass). */
  async configurePending(): Promise<void> {
    for (const entry of this.#p.registry.inState('configuring')) await this.configure(entry.eniId);
  }

  /**
   * configuring → ready: the agent configures the ENI's host link, then its addresses enter the
   * pool. The ENI (with its secondary IPs) is handed out from only once its link is configured.
   */
  async configure(eniId: string): Promise<void> {
    const { registry, pool, links } = this.#p;
    const entry = registry.get(eniId);
    const eni = entry?.eni;
    if (entry?.state !== 'configuring' || !eni)
      throw new Error(`ENI ${eniId} cannot be configured while ${entry?.state ?? 'unknown'}`);
    try {
      await links.onEniAttached?.(eni);
    } catch (err) {
      throw new Error(
        `ENI ${eniId} is attached at device ${eni.deviceNumber} but its link is not configured: ${cloudErrorText(err)}`,
        { cause: err },
      );
    }
    pool.addEni(specOf(eni));
    try {
      pool.addAddresses(eniId, lendableAddresses(eni), { unconfirmed: this.#p.lendOnlyConfirmed });
    } catch (err) {
      pool.removeEni(eniId);
      throw err;
    }
    registry.transition(eniId, 'ready');
    this.#entered(eniId);
  }

  #nextDeviceIndex(): number {
    const used = this.#p.registry.usedDeviceNumbers();
    let index = 1;
    while (used.has(index)) index++;
    return index;
  }
}

/** The primary ENI's connection-tracking timeouts, as the registry holds its description. */
function primaryConnectionTracking(registry: PoolParts['registry']): Pick<EniInfo, 'connectionTracking'> {
  const timeouts = registry.primary()?.connectionTracking;
  return timeouts === undefined ? {} : { connectionTracking: timeouts };
}

export function specOf(eni: EniInfo): EniSpec {
  return {
    eniId: eni.eniId,
    mac: eni.mac,
    deviceNumber: eni.deviceNumber,
    subnetId: eni.subnetId,
    primaryIp: eni.primaryIp,
    subnetCidr: eni.subnetCidr,
  };
}
