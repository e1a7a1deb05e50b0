// The intended kernel state of one attachment, from its ledger record alone (the record is the
// intent: ownership), and its node-side drift judged against one observation of the node.
import type { Drift, HostSidePiece, NodeObservation, PodNetworkSpec } from '../dataplane/dataplane.ts';
import { hostSideDrift, snatDrift } from '../dataplane/inspect.ts';
import { hostVethMac } from '../dataplane/names.ts';
import type { Attachment } from '../ledger/attachment.ts';

/**
 * The PodNetworkSpec the attachment's ADD built (see podSpecFor): the host veth name as recorded
 * (a network's config may have chosen its own prefix), SNAT only if the record owns an element.
 */
export function intendedSpec(att: Attachment, defaultMtu: number): PodNetworkSpec {
  return {
    netnsPath: att.netns,
    ifName: att.key.ifName,
    hostVeth: att.hostVeth,
    hostMac: hostVethMac(att.key),
    ip: att.ip,
    mtu: att.mtu > 0 ? att.mtu : defaultMtu,
    routeTable: att.routeTable,
    snat: att.resources.some((r) => r.kind === 'snat'),
  };
}

/** What of the node side of `spec` the observation lacks (inspectPod's wording). */
export function hostDrift(spec: PodNetworkSpec, node: NodeObservation): Drift<HostSidePiece>[] {
  return [
    ...hostSideDrift(spec, {
      link: node.veths.find((l) => l.ifname === spec.hostVeth),
      routes: node.routes.filter((r) => r.dst === spec.ip || r.dst === `${spec.ip}/32`),
      rules: node.rules,
    }),
    ...snatDrift(spec, node.snatElements),
  ];
}
