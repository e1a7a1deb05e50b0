// Mutating EC2 actions on ENIs and tags. Each validates its parameters, changes the state through
// VpcOperations (which runs the fabric hooks) and returns the reply body.

import { connectionTrackingOf } from '../vpc/connection-tracking.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import type { InterfaceType } from '../vpc/view.ts';
import { Ec2Error, invalidParameter, missingParameter } from './error.ts';
import type { QueryParams } from './params.ts';
import { renderEni } from './render.ts';
import type { XmlObject } from './xml.ts';

const OK: XmlObject = { return: true };

function parseInterfaceType(v: string | undefined): InterfaceType {
  if (v === undefined || v === 'interface') return 'interface';
  if (v === 'trunk' || v === 'branch') return v;
  throw invalidParameter(`Invalid value '${v}' for InterfaceType; this emulator supports trunk and branch`);
}

export function createNetworkInterface(p: QueryParams, ops: VpcOperations): XmlObject {
  const subnetId = p.require('SubnetId');
  const token = p.get('ClientToken');
  // The SDK fills ClientToken in and re-sends it on retry; EC2 answers a repeated token with the
  // ENI it already created instead of creating another.
  const tokens = ops.createdByClientToken;
  const earlier = token === undefined ? undefined : tokens.get(token);
  if (earlier !== undefined && ops.state.enis().some((e) => e.eniId === earlier)) {
    return { networkInterface: renderEni(ops.state, ops.state.eni(earlier)), clientToken: token };
  }
  const description = p.get('Description');
  const primaryIp = p.get('PrivateIpAddress');
  const interfaceType = parseInterfaceType(p.get('InterfaceType'));
  const extra = p.int('SecondaryPrivateIpAddressCount');
  const connectionTracking = connectionTrackingOf('ConnectionTrackingSpecification', (n) => p.int(n));
  const eni = createOrInUse(ops, primaryIp, {
    interfaceType,
    subnetId,
    securityGroupIds: p.list('SecurityGroupId'),
    tags: p.tagSpecifications('network-interface'),
    ...(description === undefined ? {} : { description }),
    ...(primaryIp === undefined ? {} : { primaryIp }),
    ...(connectionTracking === undefined ? {} : { connectionTracking }),
  });
  if (extra !== undefined && extra > 0) {
    try {
      ops.state.assign(eni.eniId, { count: extra });
    } catch (err) {
      ops.deleteEni(eni.eniId);
      throw err;
    }
  }
  if (token !== undefined) tokens.set(token, eni.eniId);
  return { networkInterface: renderEni(ops.state, eni), clientToken: token };
}

/** A named primary address that is taken is EC2's InvalidIPAddress.InUse for CreateNetworkInterface. */
function createOrInUse(
  ops: VpcOperations,
  primaryIp: string | undefined,
  req: Parameters<VpcOperations['createEni']>[0],
) {
  try {
    return ops.createEni(req);
  } catch (err) {
    if (
      primaryIp !== undefined &&
      err instanceof Ec2Error &&
      /already in use|reserved address range/.test(err.message)
    ) {
      throw new Ec2Error('InvalidIPAddress.InUse', 'The specified address is already in use.');
    }
    throw err;
  }
}

export function deleteNetworkInterface(p: QueryParams, ops: VpcOperations): XmlObject {
  ops.deleteEni(p.require('NetworkInterfaceId'));
  return OK;
}

export async function attachNetworkInterface(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const instanceId = p.require('InstanceId');
  const deviceIndex = p.int('DeviceIndex');
  if (deviceIndex === undefined) throw missingParameter('DeviceIndex');
  const { attachmentId } = await ops.attach(eniId, instanceId, deviceIndex);
  return { attachmentId, networkCardIndex: 0 };
}

export async function detachNetworkInterface(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  p.bool('Force');
  await ops.detach(p.require('AttachmentId'));
  return OK;
}

export function modifyNetworkInterfaceAttribute(p: QueryParams, ops: VpcOperations): XmlObject {
  const eniId = p.require('NetworkInterfaceId');
  ops.state.eni(eniId);
  const attachmentId = p.get('Attachment.AttachmentId');
  if (attachmentId !== undefined) {
    const dot = p.bool('Attachment.DeleteOnTermination');
    if (dot === undefined) throw missingParameter('Attachment.DeleteOnTermination');
    ops.state.setDeleteOnTermination(eniId, attachmentId, dot);
    return OK;
  }
  const description = p.get('Description.Value');
  const securityGroupIds = p.list('SecurityGroupId');
  const sourceDestCheck = p.bool('SourceDestCheck.Value');
  if (description === undefined && securityGroupIds.length === 0 && sourceDestCheck === undefined) {
    throw missingParameter('Attachment, Description, SourceDestCheck or SecurityGroupId');
  }
  ops.state.modifyEni(eniId, { ...(description === undefined ? {} : { description }), securityGroupIds });
  return OK;
}

export async function assignPrivateIpAddresses(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const count = p.int('SecondaryPrivateIpAddressCount');
  const wanted = p.list('PrivateIpAddress');
  const prefixCount = p.int('Ipv4PrefixCount');
  const prefixes = p.list('Ipv4Prefix');
  const given = [count !== undefined, wanted.length > 0, prefixCount !== undefined, prefixes.length > 0];
  if (given.filter(Boolean).length > 1) {
    throw invalidParameter(
      'Specify only one of PrivateIpAddress, SecondaryPrivateIpAddressCount, Ipv4Prefix and Ipv4PrefixCount',
    );
  }
  if (!given.includes(true)) {
    throw missingParameter('PrivateIpAddress, SecondaryPrivateIpAddressCount, Ipv4Prefix or Ipv4PrefixCount');
  }
  if (prefixCount !== undefined || prefixes.length > 0) {
    const assigned = await ops.assignPrefixes(
      eniId,
      prefixCount === undefined ? { ips: prefixes } : { count: prefixCount },
    );
    return {
      networkInterfaceId: eniId,
      assignedPrivateIpAddressesSet: [],
      assignedIpv4PrefixSet: assigned.map((ipv4Prefix) => ({ ipv4Prefix })),
    };
  }
  const ips = await ops.assign(eniId, count === undefined ? { ips: wanted } : { count });
  return {
    networkInterfaceId: eniId,
    assignedPrivateIpAddressesSet: ips.map((privateIpAddress) => ({ privateIpAddress })),
    assignedIpv4PrefixSet: [],
  };
}

export async function unassignPrivateIpAddresses(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const ips = p.list('PrivateIpAddress');
  const prefixes = p.list('Ipv4Prefix');
  if (ips.length === 0 && prefixes.length === 0) throw missingParameter('PrivateIpAddress or Ipv4Prefix');
  if (ips.length > 0 && prefixes.length > 0) {
    throw invalidParameter('Specify either PrivateIpAddress or Ipv4Prefix, not both');
  }
  if (prefixes.length > 0) await ops.unassignPrefixes(eniId, prefixes);
  else await ops.unassign(eniId, ips);
  return OK;
}

export function createTags(p: QueryParams, ops: VpcOperations): XmlObject {
  const ids = p.list('ResourceId');
  if (ids.length === 0) throw missingParameter('ResourceId');
  const tags = p.tags('Tag');
  if (tags.size === 0) throw missingParameter('Tag');
  ops.state.createTags(ids, tags);
  return OK;
}

/** DeleteTags: `Tag.N.Key`, with `Tag.N.Value` only when the tag must have that value to go. */
export function deleteTags(p: QueryParams, ops: VpcOperations): XmlObject {
  const ids = p.list('ResourceId');
  if (ids.length === 0) throw missingParameter('ResourceId');
  const tags = p.tagKeys('Tag');
  if (tags.size === 0) throw missingParameter('Tag');
  ops.state.deleteTags(ids, tags);
  return OK;
}
