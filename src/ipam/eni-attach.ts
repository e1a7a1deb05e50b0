// Creating and attaching one ENI for the node's pool, with the rollback that keeps anything from
// leaking: an ENI that was created but could not be attached is deleted at once.

import type { Cloud, EniInfo, InstanceMetadata } from '../cloud/cloud.ts';
import { cloudErrorText } from './cloud-error-text.ts';
import { vpcnetEniDescription, vpcnetEniTags } from './eni-ownership.ts';

/**
 * Creates an ENI in the primary ENI's subnet with the instance's security groups, tagged and
 * described as vpcnet's (so a leak collector finds it even if the attach never happens), and
 * attaches it at `deviceIndex`. If the attach fails and the delete of the new ENI fails too,
 * `onLeftOver` is told, so the caller keeps retrying the delete. Errors name the ENI, the subnet or
 * the device index and the EC2 code.
 */
export async function createAndAttachEni(
  cloud: Cloud,
  metadata: InstanceMetadata,
  deviceIndex: number,
  onLeftOver: (eniId: string, err: unknown) => void,
): Promise<EniInfo> {
  const description = vpcnetEniDescription(metadata);
  const tags = vpcnetEniTags(metadata);
  let created: Awaited<ReturnType<Cloud['createEni']>>;
  try {
    created = await cloud.createEni(metadata.subnetId, metadata.securityGroupIds, description, tags);
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
    interfaceType: 'interface',
    tags,
  };
}
