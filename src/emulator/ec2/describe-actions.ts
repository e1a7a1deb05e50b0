// Read-only EC2 actions: DescribeInstances, DescribeInstanceTypes, DescribeSubnets,
// DescribeNetworkInterfaces. Those that page (all but DescribeInstanceTypes) take MaxResults and
// NextToken as EC2 does (pagination.ts).

import { knownInstanceTypes, networkLimits } from '../vpc/instance-types.ts';
import type { MetadataOptions } from '../vpc/metadata-options.ts';
import type { SubnetPool } from '../vpc/subnet-pool.ts';
import type { Eni, Instance, VpcView } from '../vpc/view.ts';
import { Ec2Error } from './error.ts';
import { applyFilters, type FilterSchema } from './filters.ts';
import { paginate } from './pagination.ts';
import type { QueryParams } from './params.ts';
import { renderEni, renderInstanceType, renderReservation, renderSubnet } from './render.ts';
import type { XmlObject } from './xml.ts';

function eniFilters(state: VpcView): FilterSchema<Eni> {
  return {
    'network-interface-id': (e) => [e.eniId],
    'subnet-id': (e) => [e.subnetId],
    'vpc-id': () => [state.spec.vpcId],
    'availability-zone': (e) => [state.subnet(e.subnetId).spec.availabilityZone],
    status: (e) => [e.attachment === undefined && e.trunkAssociation === undefined ? 'available' : 'in-use'],
    'interface-type': (e) => [e.interfaceType],
    description: (e) => [e.description],
    'mac-address': (e) => [e.mac],
    'private-ip-address': (e) => [e.primaryIp],
    'addresses.private-ip-address': (e) => [e.primaryIp, ...e.secondaryIps],
    'group-id': (e) => e.securityGroupIds,
    'owner-id': () => ['111122223333'],
    'requester-managed': () => ['false'],
    'attachment.instance-id': (e) => (e.attachment ? [e.attachment.instanceId] : []),
    'attachment.attachment-id': (e) => (e.attachment ? [e.attachment.attachmentId] : []),
    'attachment.device-index': (e) => (e.attachment ? [String(e.attachment.deviceIndex)] : []),
    'attachment.status': (e) => (e.attachment ? ['attached'] : []),
    'attachment.delete-on-termination': (e) =>
      e.attachment ? [String(e.attachment.deleteOnTermination)] : [],
  };
}

function instanceFilters(state: VpcView): FilterSchema<Instance> {
  return {
    'instance-id': (i) => [i.instanceId],
    'instance-type': (i) => [i.instanceType],
    'instance-state-name': () => ['running'],
    'subnet-id': (i) => [i.subnetId],
    'vpc-id': () => [state.spec.vpcId],
    'private-ip-address': (i) =>
      state
        .enisOf(i.instanceId)
        .slice(0, 1)
        .map((e) => e.primaryIp),
  };
}

function subnetFilters(state: VpcView): FilterSchema<SubnetPool> {
  return {
    'subnet-id': (s) => [s.spec.subnetId],
    'vpc-id': () => [state.spec.vpcId],
    'availability-zone': (s) => [s.spec.availabilityZone],
    'cidr-block': (s) => [s.spec.cidr],
    state: () => ['available'],
  };
}

const noTags = new Map<string, string>();

export function describeNetworkInterfaces(p: QueryParams, state: VpcView): XmlObject {
  const ids = p.list('NetworkInterfaceId');
  for (const id of ids) state.eni(id);
  const chosen = ids.length > 0 ? ids.map((id) => state.eni(id)) : state.enis();
  const page = paginate(
    applyFilters(chosen, p.filters(), eniFilters(state), (e) => e.tags),
    p,
  );
  return { networkInterfaceSet: page.items.map((e) => renderEni(state, e)), nextToken: page.nextToken };
}

/** `metadataOptions`: an instance's metadata options (kept live, not in stale views). */
export function describeInstances(
  p: QueryParams,
  state: VpcView,
  metadataOptions?: (instanceId: string) => MetadataOptions,
): XmlObject {
  const ids = p.list('InstanceId');
  const chosen = ids.length > 0 ? ids.map((id) => state.instance(id)) : state.instances();
  const page = paginate(
    applyFilters(chosen, p.filters(), instanceFilters(state), (i) => i.tags),
    p,
  );
  return {
    reservationSet: page.items.map((i) => renderReservation(state, i, metadataOptions?.(i.instanceId))),
    nextToken: page.nextToken,
  };
}

export function describeSubnets(p: QueryParams, state: VpcView): XmlObject {
  const ids = p.list('SubnetId');
  const chosen = ids.length > 0 ? ids.map((id) => state.subnet(id)) : state.subnets();
  const page = paginate(
    applyFilters(chosen, p.filters(), subnetFilters(state), (s) => s.tags),
    p,
  );
  return { subnetSet: page.items.map((s) => renderSubnet(state, s)), nextToken: page.nextToken };
}

export function describeInstanceTypes(p: QueryParams): XmlObject {
  const asked = p.list('InstanceType');
  const names = asked.length > 0 ? asked : knownInstanceTypes();
  const items = names.map((name) => {
    const limits = networkLimits(name);
    if (limits === undefined) {
      throw new Ec2Error(
        'InvalidInstanceType',
        `The following supplied instance types do not exist: [${name}]`,
      );
    }
    return renderInstanceType(name, limits);
  });
  const filtered = applyFilters(
    items,
    p.filters(),
    { 'instance-type': (x) => [String(x.instanceType)] },
    () => noTags,
  );
  return { instanceTypeSet: filtered };
}
