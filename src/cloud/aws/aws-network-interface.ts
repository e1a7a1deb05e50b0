// EC2's NetworkInterface (DescribeNetworkInterfaces, CreateNetworkInterface) read from the reply's
// XML into a typed record, then into the Cloud's types; a required field EC2 left out is an
// InvalidResponse naming it.
import { isCidr, isIpv4 } from '../../infra/ipv4.ts';
import type { BranchEniFacts, ConnectionTracking, DetachedEni, EniInfo } from '../cloud.ts';
import { invalidResponse } from '../ec2-errors.ts';
import type { XmlElement } from '../ec2-query/xml-reader.ts';
import { readConnectionTracking } from './aws-connection-tracking.ts';
import { readEniIpv6 } from './aws-network-interface-ipv6.ts';

/** The fields of EC2's NetworkInterface that vpcnet reads, as EC2 sent them (any may be missing). */
export interface Ec2NetworkInterface {
  readonly networkInterfaceId?: string;
  readonly subnetId?: string;
  readonly macAddress?: string;
  readonly privateIpAddress?: string;
  readonly description?: string;
  readonly interfaceType?: string;
  readonly attachment?: { readonly attachmentId?: string; readonly deviceIndex?: number };
  readonly privateIpAddresses: readonly { readonly privateIpAddress?: string; readonly primary: boolean }[];
  readonly ipv4Prefixes: readonly { readonly ipv4Prefix?: string }[];
  readonly ipv6Addresses: readonly { readonly ipv6Address?: string }[];
  readonly ipv6Prefixes: readonly { readonly ipv6Prefix?: string }[];
  readonly tags: readonly { readonly key?: string; readonly value?: string }[];
  readonly connectionTracking?: ConnectionTracking;
}

/** Reads one `<item>` of networkInterfaceSet (or CreateNetworkInterface's networkInterface). */
export function readNetworkInterface(xml: XmlElement): Ec2NetworkInterface {
  const attachment = xml.child('attachment');
  return omitUndefined({
    networkInterfaceId: xml.string('networkInterfaceId'),
    subnetId: xml.string('subnetId'),
    macAddress: xml.string('macAddress'),
    privateIpAddress: xml.string('privateIpAddress'),
    description: xml.string('description'),
    interfaceType: xml.string('interfaceType'),
    attachment:
      attachment === undefined
        ? undefined
        : omitUndefined({
            attachmentId: attachment.string('attachmentId'),
            deviceIndex: attachment.int('deviceIndex'),
          }),
    privateIpAddresses: xml.items('privateIpAddressesSet').map((a) =>
      omitUndefined({
        privateIpAddress: a.string('privateIpAddress'),
        primary: a.bool('primary') === true,
      }),
    ),
    ipv4Prefixes: xml
      .items('ipv4PrefixSet')
      .map((p) => omitUndefined({ ipv4Prefix: p.string('ipv4Prefix') })),
    ipv6Addresses: xml
      .items('ipv6AddressesSet')
      .map((a) => omitUndefined({ ipv6Address: a.string('ipv6Address') })),
    ipv6Prefixes: xml
      .items('ipv6PrefixSet')
      .map((p) => omitUndefined({ ipv6Prefix: p.string('ipv6Prefix') })),
    tags: xml.items('tagSet').map((t) => omitUndefined({ key: t.string('key'), value: t.string('value') })),
    connectionTracking: readConnectionTracking(xml),
  });
}

/** An ENI attached to the instance; `subnetCidr` looks up its subnet's CIDR. */
export async function toEniInfo(
  doing: string,
  eni: Ec2NetworkInterface,
  subnetCidr: (subnetId: string) => Promise<string>,
): Promise<EniInfo> {
  const eniId = eni.networkInterfaceId;
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
  const subnetId = need(eni.subnetId, 'SubnetId');
  const addresses = eni.privateIpAddresses;
  const primaryIp = address(
    eni.privateIpAddress ?? addresses.find((a) => a.primary)?.privateIpAddress,
    'PrivateIpAddress',
  );
  const secondaryIps = addresses
    .filter((a) => !a.primary && a.privateIpAddress !== primaryIp)
    .map((a) => address(a.privateIpAddress, 'PrivateIpAddresses[].PrivateIpAddress'));
  const ipv4Prefixes = eni.ipv4Prefixes.map((p) => {
    if (p.ipv4Prefix === undefined || !isCidr(p.ipv4Prefix)) {
      throw invalidResponse(
        doing,
        `an IPv4 CIDR in Ipv4Prefixes[].Ipv4Prefix of ${eniId} (got ${JSON.stringify(p.ipv4Prefix)})`,
      );
    }
    return p.ipv4Prefix;
  });
  const ipv6 = readEniIpv6(doing, eniId, eni);
  return {
    eniId,
    mac: need(eni.macAddress, 'MacAddress'),
    deviceNumber: need(eni.attachment?.deviceIndex, 'Attachment.DeviceIndex'),
    attachmentId: need(eni.attachment?.attachmentId, 'Attachment.AttachmentId'),
    subnetId,
    subnetCidr: await subnetCidr(subnetId),
    primaryIp,
    secondaryIps,
    ...(ipv4Prefixes.length === 0 ? {} : { ipv4Prefixes }),
    ...ipv6,
    ...(eni.description === undefined ? {} : { description: eni.description }),
    interfaceType: eni.interfaceType ?? 'interface',
    tags: tagsOf(doing, eniId, eni),
    ...(eni.connectionTracking === undefined ? {} : { connectionTracking: eni.connectionTracking }),
  };
}

/** A branch ENI as a pod-eni annotation is checked against it; `subnetCidr` looks up its subnet's CIDR. */
export async function toBranchEniFacts(
  doing: string,
  eni: Ec2NetworkInterface,
  subnetCidr: (subnetId: string) => Promise<string>,
): Promise<BranchEniFacts> {
  const eniId = eni.networkInterfaceId;
  if (eniId === undefined) throw invalidResponse(doing, 'NetworkInterfaceId');
  const { subnetId, macAddress } = eni;
  if (subnetId === undefined) throw invalidResponse(doing, `SubnetId of ${eniId}`);
  if (macAddress === undefined) throw invalidResponse(doing, `MacAddress of ${eniId}`);
  const ip = eni.privateIpAddress ?? eni.privateIpAddresses.find((a) => a.primary)?.privateIpAddress;
  if (ip === undefined || !isIpv4(ip)) {
    throw invalidResponse(doing, `an IPv4 PrivateIpAddress of ${eniId} (got ${JSON.stringify(ip)})`);
  }
  return { eniId, mac: macAddress.toLowerCase(), ip, subnetId, subnetCidr: await subnetCidr(subnetId) };
}

/** An ENI attached to nothing, as describeDetachedEnis lists it. */
export function toDetachedEni(doing: string, eni: Ec2NetworkInterface): DetachedEni {
  const eniId = eni.networkInterfaceId;
  if (eniId === undefined) throw invalidResponse(doing, 'NetworkInterfaceId');
  if (eni.subnetId === undefined) throw invalidResponse(doing, `SubnetId of ${eniId}`);
  return {
    eniId,
    subnetId: eni.subnetId,
    ...(eni.description === undefined ? {} : { description: eni.description }),
    interfaceType: eni.interfaceType ?? 'interface',
    tags: tagsOf(doing, eniId, eni),
  };
}

function tagsOf(doing: string, eniId: string, eni: Ec2NetworkInterface): Record<string, string> {
  return Object.fromEntries(
    eni.tags.map((t) => {
      if (t.key === undefined) throw invalidResponse(doing, `TagSet[].Key of ${eniId}`);
      return [t.key, t.value ?? ''] as const;
    }),
  );
}

/** Members that may be undefined, made optional instead (exactOptionalPropertyTypes). */
type WithoutUndefined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

/** Drops undefined members, so that a field EC2 left out is absent rather than undefined. */
function omitUndefined<T extends object>(record: T): WithoutUndefined<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as WithoutUndefined<T>;
}
