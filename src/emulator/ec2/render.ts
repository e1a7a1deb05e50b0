// The emulator's state in the XML shapes EC2 replies with (element names as in the 2016-11-15
// API: networkInterfaceSet/item, privateIpAddressesSet/item, attachment, groupSet, tagSet, …).

import { renderConnectionTracking } from '../vpc/connection-tracking.ts';
import type { NetworkLimits } from '../vpc/instance-types.ts';
import type { MetadataOptions } from '../vpc/metadata-options.ts';
import type { SubnetPool } from '../vpc/subnet-pool.ts';
import type { Eni, Instance, VpcView } from '../vpc/view.ts';
import type { XmlObject, XmlValue } from './xml.ts';

export const OWNER_ID = '111122223333';

function privateDnsName(ip: string, region: string): string {
  return `ip-${ip.replaceAll('.', '-')}.${region}.compute.internal`;
}

function tagSet(tags: ReadonlyMap<string, string>): XmlValue {
  return [...tags].map(([key, value]) => ({ key, value }));
}

function groupSet(groupIds: readonly string[]): XmlValue {
  return groupIds.map((groupId) => ({
    groupId,
    groupName: groupId === 'sg-00000000000000001' ? 'default' : groupId,
  }));
}

function ipv6AddressesSet(eni: Eni): XmlValue {
  return eni.ipv6Addresses.map((ipv6Address, i) => ({ ipv6Address, isPrimaryIpv6: i === 0 }));
}

function addressSet(eni: Eni, region: string): XmlValue {
  return [eni.primaryIp, ...eni.secondaryIps].map((ip) => ({
    privateIpAddress: ip,
    privateDnsName: privateDnsName(ip, region),
    primary: ip === eni.primaryIp,
  }));
}

export function renderEni(state: VpcView, eni: Eni): XmlObject {
  const region = state.spec.region;
  const a = eni.attachment;
  return {
    networkInterfaceId: eni.eniId,
    subnetId: eni.subnetId,
    vpcId: state.spec.vpcId,
    availabilityZone: state.subnet(eni.subnetId).spec.availabilityZone,
    description: eni.description,
    ownerId: OWNER_ID,
    requesterManaged: false,
    status: a === undefined && eni.trunkAssociation === undefined ? 'available' : 'in-use',
    macAddress: eni.mac,
    privateIpAddress: eni.primaryIp,
    privateDnsName: privateDnsName(eni.primaryIp, region),
    sourceDestCheck: true,
    groupSet: groupSet(eni.securityGroupIds),
    attachment:
      a === undefined
        ? undefined
        : {
            attachmentId: a.attachmentId,
            instanceId: a.instanceId,
            instanceOwnerId: OWNER_ID,
            deviceIndex: a.deviceIndex,
            networkCardIndex: 0,
            status: 'attached',
            attachTime: a.attachTime,
            deleteOnTermination: a.deleteOnTermination,
          },
    tagSet: tagSet(eni.tags),
    privateIpAddressesSet: addressSet(eni, region),
    ipv4PrefixSet: eni.ipv4Prefixes.map((ipv4Prefix) => ({ ipv4Prefix })),
    ipv6AddressesSet: ipv6AddressesSet(eni),
    ipv6PrefixSet: eni.ipv6Prefixes.map((ipv6Prefix) => ({ ipv6Prefix })),
    interfaceType: eni.interfaceType,
    connectionTrackingConfiguration: renderConnectionTracking(eni.connectionTracking),
  };
}

function renderInstanceEni(state: VpcView, eni: Eni): XmlObject {
  const a = eni.attachment;
  return {
    networkInterfaceId: eni.eniId,
    subnetId: eni.subnetId,
    vpcId: state.spec.vpcId,
    description: eni.description,
    ownerId: OWNER_ID,
    status: 'in-use',
    macAddress: eni.mac,
    privateIpAddress: eni.primaryIp,
    privateDnsName: privateDnsName(eni.primaryIp, state.spec.region),
    sourceDestCheck: true,
    groupSet: groupSet(eni.securityGroupIds),
    attachment:
      a === undefined
        ? undefined
        : {
            attachmentId: a.attachmentId,
            deviceIndex: a.deviceIndex,
            networkCardIndex: 0,
            status: 'attached',
            attachTime: a.attachTime,
            deleteOnTermination: a.deleteOnTermination,
          },
    privateIpAddressesSet: addressSet(eni, state.spec.region),
    ipv4PrefixSet: eni.ipv4Prefixes.map((ipv4Prefix) => ({ ipv4Prefix })),
    ipv6AddressesSet: ipv6AddressesSet(eni),
    ipv6PrefixSet: eni.ipv6Prefixes.map((ipv6Prefix) => ({ ipv6Prefix })),
    interfaceType: eni.interfaceType,
    connectionTrackingConfiguration: renderConnectionTracking(eni.connectionTracking),
  };
}

export function renderInstance(state: VpcView, instance: Instance, metadata?: MetadataOptions): XmlObject {
  const enis = state.enisOf(instance.instanceId);
  const primary = enis.find((e) => e.attachment?.deviceIndex === 0);
  const pool = state.subnet(instance.subnetId);
  return {
    instanceId: instance.instanceId,
    imageId: 'ami-0123456789abcdef0',
    instanceState: { code: 16, name: 'running' },
    privateDnsName: primary === undefined ? undefined : privateDnsName(primary.primaryIp, state.spec.region),
    dnsName: '',
    amiLaunchIndex: 0,
    instanceType: instance.instanceType,
    launchTime: instance.launchTime,
    placement: { availabilityZone: pool.spec.availabilityZone, groupName: '', tenancy: 'default' },
    subnetId: instance.subnetId,
    vpcId: state.spec.vpcId,
    privateIpAddress: primary?.primaryIp,
    sourceDestCheck: true,
    groupSet: groupSet(instance.securityGroupIds),
    architecture: 'x86_64',
    rootDeviceType: 'ebs',
    hypervisor: 'xen',
    networkInterfaceSet: enis.map((e) => renderInstanceEni(state, e)),
    tagSet: tagSet(instance.tags),
    metadataOptions:
      metadata === undefined
        ? undefined
        : {
            state: 'applied',
            httpTokens: metadata.httpTokens,
            httpPutResponseHopLimit: metadata.httpPutResponseHopLimit,
            httpEndpoint: metadata.httpEndpoint,
            httpProtocolIpv6: 'disabled',
            instanceMetadataTags: 'disabled',
          },
  };
}

export function renderReservation(state: VpcView, instance: Instance, metadata?: MetadataOptions): XmlObject {
  return {
    reservationId: `r-${instance.instanceId.slice(2)}`,
    ownerId: OWNER_ID,
    groupSet: [],
    instancesSet: [renderInstance(state, instance, metadata)],
  };
}

export function renderSubnet(state: VpcView, pool: SubnetPool): XmlObject {
  return {
    subnetId: pool.spec.subnetId,
    subnetArn: `arn:aws:ec2:${state.spec.region}:${OWNER_ID}:subnet/${pool.spec.subnetId}`,
    state: 'available',
    vpcId: state.spec.vpcId,
    ownerId: OWNER_ID,
    cidrBlock: pool.spec.cidr,
    availableIpAddressCount: pool.availableCount,
    availabilityZone: pool.spec.availabilityZone,
    defaultForAz: false,
    mapPublicIpOnLaunch: false,
    tagSet: tagSet(pool.tags),
    ipv6CidrBlockAssociationSet:
      pool.spec.ipv6Cidr === undefined
        ? []
        : [
            {
              associationId: `subnet-cidr-assoc-${pool.spec.subnetId.slice('subnet-'.length)}`,
              ipv6CidrBlock: pool.spec.ipv6Cidr,
              ipv6CidrBlockState: { state: 'associated' },
            },
          ],
  };
}

export function renderInstanceType(instanceType: string, limits: NetworkLimits): XmlObject {
  return {
    instanceType,
    currentGeneration: true,
    hypervisor: 'nitro',
    networkInfo: {
      networkPerformance: 'Up to 10 Gigabit',
      maximumNetworkInterfaces: limits.maxEnis,
      maximumNetworkCards: 1,
      defaultNetworkCardIndex: 0,
      networkCards: [
        {
          networkCardIndex: 0,
          networkPerformance: 'Up to 10 Gigabit',
          maximumNetworkInterfaces: limits.maxEnis,
        },
      ],
      ipv4AddressesPerInterface: limits.ipsPerEni,
      ipv6AddressesPerInterface: limits.ipsPerEni,
      ipv6Supported: true,
      enaSupport: 'required',
      efaSupported: false,
      encryptionInTransitSupported: true,
    },
  };
}
