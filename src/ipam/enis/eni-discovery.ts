// ENIs found attached to the instance (at start, or when the agent looks again) join the registry:
// those vpcnet must not use as unmanaged, the others on their way into the pool.

import type { EniInfo } from '../../cloud/cloud.ts';
import { specOf } from '../pool/pool-growth.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import { lendableAddresses } from '../prefixes/prefixes.ts';
import { createdByVpcnet, unmanagedReason } from './eni-ownership.ts';

export interface AdoptedEnis {
  readonly managed: EniInfo[];
  readonly unmanaged: EniInfo[];
}

/**
 * Registers the described ENIs the registry does not know yet. Managed ones go to `state`:
 * `configuring` (their link is set up next), or `ready` straight into the pool (the caller sets
 * up their links itself). ENIs vpcnet deleted that a stale describe still lists are skipped.
 */
export function adoptEnis(
  parts: Pick<
    PoolParts,
    'registry' | 'pool' | 'log' | 'placement' | 'lendOnlyConfirmed' | 'manageUntagged' | 'metadata'
  >,
  described: readonly EniInfo[],
  state: 'configuring' | 'ready',
): AdoptedEnis {
  const { registry, pool, log } = parts;
  const managed: EniInfo[] = [];
  const unmanaged: EniInfo[] = [];
  for (const eni of [...described].sort((a, b) => a.deviceNumber - b.deviceNumber)) {
    if (registry.knows(eni.eniId)) continue;
    const facts = { createdByVpcnet: createdByVpcnet(eni) };
    const untagged = { manageUntagged: parts.manageUntagged, instanceId: parts.metadata.instanceId };
    const reason = unmanagedReason(eni, untagged) ?? placementReason(eni, parts.placement);
    if (reason !== undefined) {
      registry.add(eni, 'unmanaged', { ...facts, unmanagedReason: reason });
      unmanaged.push(eni);
      log.info('ENI not managed by vpcnet; its addresses are left alone', {
        eni: eni.eniId,
        device: eni.deviceNumber,
        interfaceType: eni.interfaceType,
        reason,
      });
      continue;
    }
    if (state === 'ready') {
      pool.addEni(specOf(eni));
      pool.addAddresses(eni.eniId, lendableAddresses(eni), { unconfirmed: parts.lendOnlyConfirmed });
    }
    registry.add(eni, state, facts);
    managed.push(eni);
  }
  return { managed, unmanaged };
}

/** Custom networking: the primary ENI sits in the node's subnet, not the pods'; it lends no address. */
function placementReason(eni: EniInfo, placement: PoolParts['placement']): string | undefined {
  if (eni.deviceNumber !== 0 || placement.primaryEniCarriesPods) return undefined;
  return 'custom networking: the primary ENI carries no pods';
}
