// The CNI result of an attachment, from its recorded plan: the host veth, the pod interface (with
// the MAC derived from the key), the pod's address and its default route via the link-local
// gateway (169.254.1.1 for IPv4 pods; fe80::1 and a /128 for IPv6 pods). An IPv6 pod's IPv4 egress
// veth is listed as interfaces without its address, as upstream's egress plugin reports it: a
// runtime takes the result's addresses as the pod's IPs, and 169.254.172.x is no pod IP.
import type { CniInterface, CniResult } from '../../cni/result.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { POD_GATEWAY_V6 } from '../../plan/ipv6-pod-plan.ts';
import { POD_GATEWAY } from '../../plan/pod-plan.ts';
import { type VethResource, vpcAddressOf } from '../../plan/resource.ts';

/** The pod's address: its VPC address, or (a branch ENI's pod) the /32 on its interface. */
export function podAddress(att: Attachment): string | undefined {
  const vpc = vpcAddressOf(att.resources)?.ip;
  if (vpc !== undefined) return vpc;
  const onPod = att.resources.find((r) => r.kind === 'ifAddress' && r.side === 'pod');
  return onPod?.kind === 'ifAddress' ? onPod.cidr.split('/')[0] : undefined;
}

function vethInterfaces(veth: VethResource, sandbox: string): CniInterface[] {
  return [
    { name: veth.hostName, mac: veth.hostMac },
    { name: veth.podIfName, ...(veth.podMac ? { mac: veth.podMac } : {}), sandbox },
  ];
}

export function resultFor(att: Attachment): CniResult {
  const veths = att.resources.filter((r): r is VethResource => r.kind === 'veth');
  const [veth, ...others] = veths;
  const ip = podAddress(att);
  const v6 = ip?.includes(':') === true;
  const gateway = v6 ? POD_GATEWAY_V6 : POD_GATEWAY;
  return {
    interfaces: [
      { name: veth?.hostName ?? '', mac: veth?.hostMac ?? '' },
      { name: att.key.ifName, ...(veth?.podMac ? { mac: veth.podMac } : {}), sandbox: att.netns },
      ...others.flatMap((v) => vethInterfaces(v, att.netns)),
    ],
    ips: ip === undefined ? [] : [{ address: `${ip}/${v6 ? 128 : 32}`, gateway, interface: 1 }],
    routes: [{ dst: v6 ? '::/0' : '0.0.0.0/0', gw: gateway }],
    dns: {},
  };
}
