// Packets the VPC received from each ENI with a fabric link, branches on trunks included: how
// the lab shows which ENI a pod's traffic left through.
import type { BranchOnTrunk, Fabric, FabricEni } from '../api.ts';
import { Ec2Error } from '../ec2/error.ts';
import type { VpcState } from './state.ts';
import type { Eni } from './view.ts';

export interface EniTraffic {
  readonly eniId: string;
  readonly interfaceType: string;
  readonly instanceId: string | null;
  readonly trunkEniId: string | null;
  readonly vlanId: number | null;
  readonly receivedPackets: number;
}

/** The received-packet count of every ENI (and branch) with a fabric link, as the fabric reports it. */
export async function eniTraffic(
  state: VpcState,
  fabric: Fabric | undefined,
  linkedToFabric: (eni: Eni) => boolean,
  fabricEni: (eni: Eni) => FabricEni,
): Promise<EniTraffic[]> {
  if (fabric?.receivedPackets === undefined) {
    throw new Ec2Error('IncorrectState', 'this emulator has no fabric, so no traffic to count', 409);
  }
  const linked = state.enis().filter(linkedToFabric);
  const branches: { eni: Eni; on: BranchOnTrunk }[] = [];
  for (const trunk of linked.filter((e) => e.interfaceType === 'trunk')) {
    for (const branch of state.branchesOf(trunk.eniId)) {
      const vlanId = branch.trunkAssociation?.vlanId ?? 0;
      branches.push({
        eni: branch,
        on: { trunk: fabricEni(trunk), vlanId, branch: fabricEni(branch) },
      });
    }
  }
  const counts = await fabric.receivedPackets(
    linked.map((e) => fabricEni(e)),
    branches.map((b) => b.on),
  );
  return [...linked, ...branches.map((b) => b.eni)].map((e) => ({
    eniId: e.eniId,
    interfaceType: e.interfaceType,
    instanceId: e.attachment?.instanceId ?? null,
    trunkEniId: e.trunkAssociation?.trunkEniId ?? null,
    vlanId: e.trunkAssociation?.vlanId ?? null,
    receivedPackets: counts.get(e.eniId) ?? 0,
  }));
}
