// Creating and attaching one ENI for the node's pool, with the rollback that keeps anything from
// leaking: an ENI that was created but could not be attached is deleted at once.

import { type Cloud, CloudError, type EniInfo, type InstanceMetadata } from '../cloud/cloud.ts';

export function cloudErrorText(err: unknown): string {
  if (err instanceof CloudError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** Every ENI vpcnet creates has a description starting with this: the mark that lets it free one. */
export const VPCNET_ENI_DESCRIPTION_PREFIX = 'vpcnet:';

/** Ownership: vpcnet detaches and deletes only ENIs it created, never the primary ENI. */
export function createdByVpcnet(eni: EniInfo): boolean {
  return eni.deviceNumber !== 0 && (eni.description ?? '').startsWith(VPCNET_ENI_DESCRIPTION_PREFIX);
}

/**
 * Creates an ENI in the primary ENI's subnet with the instance's security groups and attaches
 * it at `deviceIndex`. Errors name the ENI, the subnet or the device index and the EC2 code.
 */
export async function createAndAttachEni(
  cloud: Cloud,
  metadata: InstanceMetadata,
  deviceIndex: number,
  onLeftOver: (eniId: string, err: unknown) => void,
): Promise<EniInfo> {
  const description = `${VPCNET_ENI_DESCRIPTION_PREFIX} node ${metadata.instanceId}`;
  let created: Awaited<ReturnType<Cloud['createEni']>>;
  try {
    created = await cloud.createEni(metadata.subnetId, metadata.securityGroupIds, description);
  } catch (err) {
    throw new Error(`cannot create an ENI in ${metadata.subnetId}: ${cloudErrorText(err)}`, { cause: err });
  }
  let attachmentId: string;
  try {
    attachmentId = await cloud.attachEni(created.eniId, metadata.instanceId, deviceIndex);
  } catch (err) {
    await cloud.deleteEni(created.eniId).catch((delErr: unknown) => onLeftOver(created.eniId, delErr));
    throw new Error(
      `cannot attach ENI ${created.eniId} at device index ${deviceIndex}: ${cloudErrorText(err)}`,
      { cause: err },
    );
  }
  return {
    eniId: created.eniId,
    mac: created.mac,
    deviceNumber: deviceIndex,
    attachmentId,
    subnetId: metadata.subnetId,
    subnetCidr: metadata.subnetCidr,
    primaryIp: created.primaryIp,
    secondaryIps: [],
    description,
  };
}
