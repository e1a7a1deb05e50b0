// EC2's TrunkInterfaceAssociation (DescribeTrunkInterfaceAssociations) read from the reply's XML:
// which branch ENI sits on which trunk under which VLAN ID. A field vpcnet relies on that EC2 left
// out is an InvalidResponse naming it.
import type { TrunkAssociation } from '../cloud.ts';
import { invalidResponse } from '../ec2-errors.ts';
import type { XmlElement } from '../ec2-query/xml-reader.ts';

/** Reads one `<item>` of interfaceAssociationSet. */
export function readTrunkAssociation(doing: string, xml: XmlElement): TrunkAssociation {
  const associationId = xml.string('associationId');
  if (associationId === undefined) throw invalidResponse(doing, 'InterfaceAssociations[].AssociationId');
  const need = <T>(value: T | undefined, field: string): T => {
    if (value === undefined) throw invalidResponse(doing, `${field} of association ${associationId}`);
    return value;
  };
  const vlanId = need(xml.int('vlanId'), 'VlanId');
  if (vlanId < 1 || vlanId > 4094)
    throw invalidResponse(doing, `a VLAN ID of association ${associationId} (got ${vlanId})`);
  return {
    associationId,
    branchEniId: need(xml.string('branchInterfaceId'), 'BranchInterfaceId'),
    trunkEniId: need(xml.string('trunkInterfaceId'), 'TrunkInterfaceId'),
    vlanId,
  };
}
