// Creating and attaching one ENI for the node's pool, with what keeps it from leaking: the ENI
// carries its owner, instance and creation-time tags from its creation on; the creation is recorded
// in the ledger before EC2 is asked (an agent killed meanwhile, or left with an ambiguous error,
// then looks for the ENI by its tags and deletes it: leaked-enis.ts); the ENI is recorded before
// the attach (a restart attaches or deletes it); and one that cannot be attached is deleted.

import {
  type Cloud,
  CloudError,
  type ConnectionTracking,
  type EniInfo,
  type InstanceMetadata,
} from '../../cloud/cloud.ts';
import { isThrottled } from '../../cloud/ec2-retry.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { vpcnetEniDescription, vpcnetEniTags } from './eni-ownership.ts';
import type { EniPlacement } from './eni-placement.ts';
import type { EniTagOptions } from './eni-tags.ts';
import type { EniJournal } from './pending-enis.ts';

/** EC2's answers to CreateNetworkInterface with a named primary address that is not free. */
const NAMED_ADDRESS_REFUSALS = new Set(['InvalidIPAddress.InUse', 'InvalidParameterValue']);

export interface EniAttachRequest {
  /** The subnet and security groups of the new ENI (eni-placement.ts). */
  readonly placement: EniPlacement;
  readonly deviceIndex: number;
  /** ms since epoch: the creation time the ENI is tagged with. */
  readonly createdAtMs: number;
  readonly tags: EniTagOptions;
  /** The primary ENI's connection-tracking timeouts, which the new ENI gets too (as upstream). */
  readonly connectionTracking?: ConnectionTracking;
  readonly journal: EniJournal;
  /** The new ENI could not be attached nor deleted: the caller keeps retrying the delete. */
  readonly onLeftOver: (eniId: string, err: unknown) => void;
  /**
   * A primary IP to name (the subnet census's pick inside a broken /28): `refused` is told when EC2
   * answers that it is taken, and the ENI is then created with one EC2 picks; `used` when it was.
   */
  readonly primaryIp?: { readonly ip: string; refused(err: unknown): void; used(): void } | undefined;
}

/**
 * Creates an ENI in the placement's subnet with its security groups, tagged and
 * described as vpcnet's, records it (durably) as attaching, and attaches it at the device index.
 * The caller drops the record once the ENI is registered. Errors name the ENI, the subnet or the
 * device index and the EC2 code.
 */
export async function createAndAttachEni(
  cloud: Cloud,
  metadata: InstanceMetadata,
  req: EniAttachRequest,
): Promise<EniInfo> {
  const description = vpcnetEniDescription(metadata);
  const tags = vpcnetEniTags(metadata, req.createdAtMs, req.tags);
  const { subnetId, subnetCidr, securityGroupIds } = req.placement;
  const create = (primaryIp?: string) =>
    cloud.createEni(
      subnetId,
      securityGroupIds,
      description,
      tags,
      undefined,
      req.connectionTracking,
      primaryIp,
    );
  let token: string;
  try {
    token = await req.journal.creating(subnetId, req.createdAtMs);
  } catch (err) {
    throw new Error(
      `cannot record the creation of an ENI in ${subnetId} in the ledger: ${cloudErrorText(err)}`,
      {
        cause: err,
      },
    );
  }
  let created: Awaited<ReturnType<Cloud['createEni']>>;
  try {
    const named = req.primaryIp;
    if (named === undefined) created = await create();
    else {
      try {
        created = await create(named.ip);
        named.used();
      } catch (err) {
        // Taken since the census (or refused for another reason of that address): EC2 picks.
        named.refused(err);
        if (!(err instanceof CloudError && NAMED_ADDRESS_REFUSALS.has(err.code))) throw err;
        created = await create();
      }
    }
  } catch (err) {
    // A refusal made nothing; any other failure (a lost reply, a 5xx after the retries) may have.
    if (madeNothing(err)) await req.journal.createRefused(token);
    else req.journal.createInDoubt(token);
    throw new Error(`cannot create an ENI in ${subnetId}: ${cloudErrorText(err)}`, { cause: err });
  }
  const eniId = created.eniId;
  try {
    await req.journal.attaching(eniId, token);
  } catch (err) {
    await deleteUnattached(cloud, eniId, req);
    throw new Error(
      `cannot record new ENI ${eniId} in the ledger before attaching it: ${cloudErrorText(err)}`,
      {
        cause: err,
      },
    );
  }
  let attachmentId: string;
  try {
    attachmentId = await cloud.attachEni(eniId, metadata.instanceId, req.deviceIndex);
  } catch (err) {
    await deleteUnattached(cloud, eniId, req);
    throw new Error(`cannot attach ENI ${eniId} at device index ${req.deviceIndex}: ${cloudErrorText(err)}`, {
      cause: err,
    });
  }
  return {
    eniId,
    mac: created.mac,
    deviceNumber: req.deviceIndex,
    attachmentId,
    subnetId,
    subnetCidr,
    primaryIp: created.primaryIp,
    secondaryIps: [],
    description,
    interfaceType: 'interface',
    tags,
    ...(req.connectionTracking === undefined ? {} : { connectionTracking: req.connectionTracking }),
  };
}

/**
 * The creation's error says EC2 made no ENI on its last try: refused (an answer EC2 gave, not
 * retried) or throttled. A lost or unreadable reply, or EC2's own failure, may have made one. (An
 * earlier try that failed with EC2's own error and was followed by throttles is not told apart;
 * the leaked-ENI sweep covers that ENI after its grace.)
 */
function madeNothing(err: unknown): boolean {
  if (!(err instanceof CloudError)) return false;
  if (isThrottled(err)) return true;
  return !err.retryable && err.code !== 'InvalidResponse' && err.code !== 'Unknown';
}

/** Deletes a new ENI that never got attached; one that cannot be deleted yet is left to the retries. */
async function deleteUnattached(cloud: Cloud, eniId: string, req: EniAttachRequest): Promise<void> {
  try {
    await cloud.deleteEni(eniId);
  } catch (err) {
    await req.journal.deleting(eniId);
    req.onLeftOver(eniId, err);
    return;
  }
  await req.journal.done(eniId);
}
