// EC2's NetworkInterface (DescribeNetworkInterfaces) read once into the Cloud's types; a
// required field EC2 left out is an InvalidResponse naming it.
import type { NetworkInterface } from '@aws-sdk/client-ec2';
import { isIpv4 } from '../infra/ipv4.ts';
import type { DetachedEni, EniInfo } from './cloud.ts';
import { invalidResponse } from './ec2-errors.ts';

/** An ENI attached to the instance; `subnetCidr` looks up its subnet's CIDR. */
export async function toEniInfo(
  doing: string,
  eni: NetworkInterface,
  subnetCidr: (subnetId: string) => Promise<string>,
): Promise<EniInfo> {
  const eniId = eni.NetworkInterfaceId;
  if (eniId === undefined) throw invalidResponse(doing, 'NetworkInterfaceId');
  const need = <T>(value: T | undefined, field: string): T => {
    if (value === undefined) throw invalidResponse(doing, `${field} of ${eniId}`);
    return value;
  };
  const address = (value: string | undefined, field: string): string => {
    if (value !== undefined && !isIpv4(value)) {
      throw invalidResponse(doing, `an IPv4 address in ${field} of ${eniId} (got ${JSON.stringify(value)})`);
    }
    return need(value, field);
  };
  const subnetId = need(eni.SubnetId, 'SubnetId');
  const addresses = eni.PrivateIpAddresses ?? [];
  const primaryIp = address(
    eni.PrivateIpAddress ?? addresses.find((a) => a.Primary === true)?.PrivateIpAddress,
    'PrivateIpAddress',
  );
  const secondaryIps = addresses
    .filter((a) => a.Primary !== true && a.PrivateIpAddress !== primaryIp)
    .map((a) => address(a.PrivateIpAddress, 'PrivateIpAddresses[].PrivateIpAddress'));
  return {
    eniId,
    mac: need(eni.MacAddress, 'MacAddress'),
    deviceNumber: need(eni.Attachment?.DeviceIndex, 'Attachment.DeviceIndex'),
    attachmentId: need(eni.Attachment?.AttachmentId, 'Attachment.AttachmentId'),
    subnetId,
    subnetCidr: await subnetCidr(subnetId),
    primaryIp,
    secondaryIps,
    ...(eni.Description === undefined ? {} : { description: eni.Description }),
    interfaceType: eni.InterfaceType ?? 'interface',
    tags: tagsOf(doing, eniId, eni),
  };
}

/** An ENI attached to nothing, as describeDetachedEnis lists it. */
export function toDetachedEni(doing: string, eni: NetworkInterface): DetachedEni {
  const eniId = eni.NetworkInterfaceId;
  if (eniId === undefined) throw invalidResponse(doing, 'NetworkInterfaceId');
  if (eni.SubnetId === undefined) throw invalidResponse(doing, `SubnetId of ${eniId}`);
  return {
    eniId,
    subnetId: eni.SubnetId,
    ...(eni.Description === undefined ? {} : { description: eni.Description }),
    interfaceType: eni.InterfaceType ?? 'interface',
    tags: tagsOf(doing, eniId, eni),
  };
}

function tagsOf(doing: string, eniId: string, eni: NetworkInterface): Record<string, string> {
  return Object.fromEntries(
    (eni.TagSet ?? []).map((t) => {
      if (t.Key === undefined) throw invalidResponse(doing, `TagSet[].Key of ${eniId}`);
      return [t.Key, t.Value ?? ''] as const;
    }),
  );
}
