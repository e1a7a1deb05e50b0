// The CNI result of an attachment, from its recorded plan: the host veth, the pod interface (with
// the MAC derived from the key), the pod's /32 and its default route via the link-local gateway.
import type { CniResult } from '../cni/result.ts';
import type { Attachment } from '../plan/attachment.ts';
import { POD_GATEWAY } from '../plan/pod-plan.ts';
import { vethOf, vpcAddressOf } from '../plan/resource.ts';

/** The pod's address: its VPC address, or (a branch ENI's pod) the /32 on its interface. */
export function podAddress(att: Attachment): string | undefined {
  const vpc = vpcAddressOf(att.resources)?.ip;
  if (vpc !== undefined) return vpc;
  const onPod = att.resources.find((r) => r.kind === 'ifAddress' && r.side === 'pod');
  return onPod?.kind === 'ifAddress' ? onPod.cidr.split('/')[0] : undefined;
}

export function resultFor(att: Attachment): CniResult {
  const veth = vethOf(att.resources);
  const ip = podAddress(att);
  return {
    interfaces: [
      { name: veth?.hostName ?? '', mac: veth?.hostMac ?? '' },
      { name: att.key.ifName, ...(veth?.podMac ? { mac: veth.podMac } : {}), sandbox: att.netns },
    ],
    ips: ip === undefined ? [] : [{ address: `${ip}/32`, gateway: POD_GATEWAY, interface: 1 }],
    routes: [{ dst: '0.0.0.0/0', gw: POD_GATEWAY }],
    dns: {},
  };
}
