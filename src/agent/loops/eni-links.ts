// The links of the node's secondary ENIs: what the pool manager asks the dataplane to set up when
// an ENI is attached, and to take down before it is detached.
import type { EniInfo } from '../../cloud/cloud.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { subnetGateway } from '../../infra/ipv4.ts';
import { routeTableFor } from '../../ipam/pool/pool.ts';
import type { EniLinkSpec } from '../../plan/eni-plan.ts';

function eniLinkSpec(eni: EniInfo, mtu: number): EniLinkSpec {
  return {
    mac: eni.mac,
    deviceNumber: eni.deviceNumber,
    primaryIp: eni.primaryIp,
    subnetCidr: eni.subnetCidr,
    gateway: subnetGateway(eni.subnetCidr),
    routeTable: routeTableFor(eni.deviceNumber),
    mtu,
  };
}

/** The ENI link hooks the pool manager calls (its registry protects their rules from GC meanwhile). */
export function eniLinks(dataplane: Dataplane, mtu: number) {
  return {
    async onEniAttached(eni: EniInfo): Promise<void> {
      if (eni.deviceNumber === 0) return; // the primary ENI is the node's own interface
      await dataplane.setupEni(eniLinkSpec(eni, mtu));
    },
    async onEniDetaching(eni: EniInfo): Promise<void> {
      await dataplane.teardownEni(eniLinkSpec(eni, mtu));
    },
  };
}
