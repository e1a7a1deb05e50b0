// Trunk ENIs and their branch ENIs (pods with their own security groups): AssociateTrunkInterface,
// DisassociateTrunkInterface, DescribeTrunkInterfaceAssociations.

import type { VpcOperations } from '../vpc/operations.ts';
import type { Eni, VpcView } from '../vpc/view.ts';
import { missingParameter } from './error.ts';
import { applyFilters } from './filters.ts';
import { paginate } from './pagination.ts';
import type { QueryParams } from './params.ts';
import type { XmlObject } from './xml.ts';

function renderAssociation(branch: Eni): XmlObject {
  const a = branch.trunkAssociation!;
  return {
    associationId: a.associationId,
    branchInterfaceId: branch.eniId,
    trunkInterfaceId: a.trunkEniId,
    interfaceProtocol: 'VLAN',
    vlanId: a.vlanId,
    tagSet: [],
  };
}

export async function associateTrunkInterface(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const branchId = p.require('BranchInterfaceId');
  const trunkId = p.require('TrunkInterfaceId');
  const vlanId = p.int('VlanId');
  if (vlanId === undefined) throw missingParameter('VlanId');
  await ops.associateTrunk(branchId, trunkId, vlanId);
  return {
    interfaceAssociation: renderAssociation(ops.state.eni(branchId)),
    clientToken: p.get('ClientToken'),
  };
}

export async function disassociateTrunkInterface(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  await ops.disassociateTrunk(p.require('AssociationId'));
  return { return: true, clientToken: p.get('ClientToken') };
}

export function describeTrunkInterfaceAssociations(p: QueryParams, view: VpcView): XmlObject {
  const ids = p.list('AssociationId');
  const branches =
    ids.length > 0
      ? ids.map((id) => view.eniByAssociation(id))
      : view.enis().filter((e) => e.trunkAssociation);
  const found = applyFilters(
    branches,
    p.filters(),
    {
      'trunk-interface-association.trunk-interface-id': (e) => [e.trunkAssociation?.trunkEniId ?? ''],
      'trunk-interface-association.branch-interface-id': (e) => [e.eniId],
      'trunk-interface-association.id': (e) => [e.trunkAssociation?.associationId ?? ''],
      'gre-key': () => [],
    },
    () => new Map(),
  );
  // EC2 takes MaxResults 5-255 for this action.
  const page = paginate(found, p, 5, 255);
  return { interfaceAssociationSet: page.items.map(renderAssociation), nextToken: page.nextToken };
}
