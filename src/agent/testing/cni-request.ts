// CNI requests as the plugin forwards them to the agent, and the address a result gave the pod.
import type { ForwardedRequest } from '../../cni/wire.ts';

const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' });

/** A request of the `vpcnet` network for eth0 of the pod `default/<pod>`. */
export function cniRequest(
  command: string,
  containerId: string,
  netns: string,
  pod = 'web-0',
  uid = 'uid-1',
): ForwardedRequest {
  return {
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_UID=${uid}`,
    },
    stdin: conf,
  };
}

/** The first address of a CNI result, without its prefix length. */
export function ipOf(stdout: string): string {
  const r = JSON.parse(stdout) as { ips: { address: string }[] };
  return r.ips[0]!.address.split('/')[0]!;
}
