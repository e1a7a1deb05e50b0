// Creating and attaching one ENI for the node's pool, with what keeps it from leaking: the ENI
// carries its owner, instance and creation-time tags from its creation on (the leaked-ENI sweep
// finds it even if the agent dies before anything else happens); it is recorded in the ledger
// before the attach (a restart attaches or deletes it); and one that cannot be attached is deleted.

import {
  type Cloud,
  CloudError,
  type ConnectionTracking,
  type EniInfo,
  type InstanceMetadata,
} from '../../cloud/cloud.ts';
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
    throw new Error(`cannot create an ENI in ${subnetId}: ${cloudErrorText(err)}`, { cause: err });
  }
  const eniId = created.eniId;
  try {
    await req.journal.attaching(eniId);
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
