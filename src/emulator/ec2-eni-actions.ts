// Mutating EC2 actions on ENIs and tags. Each validates its parameters, changes the state through
// VpcOperations (which runs the fabric hooks) and returns the reply body.
import { invalidParameter, missingParameter } from './ec2-error.ts';
import type { QueryParams } from './ec2-params.ts';
import { renderEni } from './ec2-render.ts';
import type { XmlObject } from './ec2-xml.ts';
import type { VpcOperations } from './vpc-operations.ts';

const OK: XmlObject = { return: true };

export function createNetworkInterface(p: QueryParams, ops: VpcOperations): XmlObject {
  const subnetId = p.require('SubnetId');
  const description = p.get('Description');
  const primaryIp = p.get('PrivateIpAddress');
  const eni = ops.createEni({
    subnetId,
    securityGroupIds: p.list('SecurityGroupId'),
    tags: p.tagSpecifications('network-interface'),
    ...(description === undefined ? {} : { description }),
    ...(primaryIp === undefined ? {} : { primaryIp }),
  });
  const extra = p.int('SecondaryPrivateIpAddressCount');
  if (extra !== undefined && extra > 0) {
    try {
      ops.state.assign(eni.eniId, { count: extra });
    } catch (err) {
      ops.deleteEni(eni.eniId);
      throw err;
    }
  }
  return { networkInterface: renderEni(ops.state, eni) };
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
  const attachment = await ops.attach(eniId, instanceId, deviceIndex);
  return { attachmentId: attachment.attachmentId, networkCardIndex: 0 };
}

export async function detachNetworkInterface(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  p.bool('Force');
  await ops.detach(p.require('AttachmentId'));
  return OK;
}

export function modifyNetworkInterfaceAttribute(p: QueryParams, ops: VpcOperations): XmlObject {
  const eni = ops.state.eni(p.require('NetworkInterfaceId'));
  const attachmentId = p.get('Attachment.AttachmentId');
  if (attachmentId !== undefined) {
    const attached = ops.state.eniByAttachment(attachmentId);
    if (attached !== eni || eni.attachment === undefined) {
      throw invalidParameter(`Attachment '${attachmentId}' does not belong to ${eni.eniId}`);
    }
    const dot = p.bool('Attachment.DeleteOnTermination');
    if (dot !== undefined) eni.attachment.deleteOnTermination = dot;
    return OK;
  }
  const known = ['Description.Value', 'SourceDestCheck.Value', 'SecurityGroupId.1'];
  if (!known.some((k) => p.get(k) !== undefined)) {
    throw missingParameter('Attachment, Description, SourceDestCheck or SecurityGroupId');
  }
  return OK;
}

export async function assignPrivateIpAddresses(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const count = p.int('SecondaryPrivateIpAddressCount');
  const wanted = p.list('PrivateIpAddress');
  if (count !== undefined && wanted.length > 0) {
    throw invalidParameter('Specify either PrivateIpAddress or SecondaryPrivateIpAddressCount, not both');
  }
  if (count === undefined && wanted.length === 0) {
    throw missingParameter('PrivateIpAddress or SecondaryPrivateIpAddressCount');
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
  if (ips.length === 0) throw missingParameter('PrivateIpAddress');
  await ops.unassign(eniId, ips);
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
