// The pod network part of the agent's configuration (settings-pod-network.ts), derived and checked
// once at start: the two MTUs and which name gave them, and the combinations that cannot be
// honoured, refused with what to change.
import { parseCidrList } from './cidr-list.ts';
import { ConfigError } from './config-error.ts';
import type { SettingValues } from './setting.ts';
import type { POD_NETWORK_SETTINGS } from './settings-pod-network.ts';

export interface PodNetworkConfig {
  /**
   * `eni`: the MTU of the ENI links vpcnet configures (AWS_VPC_ENI_MTU); `pod`: pods' interfaces
   * (POD_MTU, else the ENI MTU, as upstream derives it), unless a network's config sets `mtu`.
   */
  readonly mtu: { readonly eni: number; readonly pod: number };
  /** ANNOTATE_POD_IP: `vpc.amazonaws.com/pod-ips` written after ADD, emptied after DEL. */
  readonly annotatePodIp: boolean;
  /** AWS_EXTERNAL_SERVICE_CIDRS: reached through the main table from every pod (rules at 1535). */
  readonly externalServiceCidrs: readonly string[];
  /** DISABLE_TCP_EARLY_DEMUX: the install step set net.ipv4.tcp_early_demux=0; the agent checks. */
  readonly disableTcpEarlyDemux: boolean;
  /** DISABLE_POD_V6: the install step chains `tuning` to disable IPv6 in pods (the agent only checks the mode). */
  readonly disablePodV6: boolean;
  /** ENABLE_V6_EGRESS in IPv4 mode: pods' IPv6 leaves through v6if0, SNATed to the node's IPv6. */
  readonly v6Egress: boolean;
}

/** The kernel refuses IPv6 on a link whose MTU is below this (RFC 8200's minimum link MTU). */
export const IPV6_MIN_MTU = 1280;
const DEFAULT_MTU = 9001;

type Values = SettingValues<typeof POD_NETWORK_SETTINGS>;

function mtus(v: Values): PodNetworkConfig['mtu'] {
  if (v.mtu !== undefined && (v.eniMtu !== undefined || v.podMtu !== undefined)) {
    throw new ConfigError(
      `VPCNET_MTU is vpcnet's older name for both MTUs and cannot be combined with ${
        v.eniMtu !== undefined ? 'AWS_VPC_ENI_MTU' : 'POD_MTU'
      }: set AWS_VPC_ENI_MTU (ENI links) and POD_MTU (pods) instead`,
    );
  }
  const eni = v.eniMtu ?? v.mtu ?? DEFAULT_MTU;
  return { eni, pod: v.podMtu ?? eni };
}

/** Which variable gave the pod MTU, for an error that names what to change. */
function podMtuSource(v: Values): string {
  if (v.podMtu !== undefined) return 'POD_MTU';
  if (v.eniMtu !== undefined) return 'AWS_VPC_ENI_MTU';
  return v.mtu !== undefined ? 'VPCNET_MTU' : 'the default';
}

export function podNetworkConfig(
  v: Values,
  mode: { readonly ipv6: boolean; readonly kubeApi: boolean },
): PodNetworkConfig {
  const mtu = mtus(v);
  const v6Egress = v.enableV6Egress && !mode.ipv6;
  for (const [on, what] of [
    [mode.ipv6, 'ENABLE_IPv6=true'],
    [v6Egress, 'ENABLE_V6_EGRESS=true'],
  ] as const) {
    if (on && mtu.pod < IPV6_MIN_MTU) {
      throw new ConfigError(
        `${what} needs a pod MTU of at least ${IPV6_MIN_MTU} (IPv6's minimum), ${podMtuSource(v)} gives ${mtu.pod}: raise POD_MTU`,
      );
    }
  }
  if (v.annotatePodIp && !mode.kubeApi) {
    throw new ConfigError(
      'ANNOTATE_POD_IP=true needs the Kubernetes API (the annotation is written there): set VPCNET_KUBE_API or run in-cluster',
    );
  }
  if (v.disablePodV6 && mode.ipv6) {
    throw new ConfigError(
      "DISABLE_POD_V6=true with ENABLE_IPv6=true: IPv6 is IPv6 pods' only address family; turn one off",
    );
  }
  if (v.disablePodV6 && v6Egress) {
    throw new ConfigError(
      'DISABLE_POD_V6=true with ENABLE_V6_EGRESS=true: the first disables IPv6 in pods, the second gives them IPv6 egress; turn one off',
    );
  }
  return {
    mtu,
    annotatePodIp: v.annotatePodIp,
    externalServiceCidrs:
      v.externalServiceCidrs === undefined
        ? []
        : parseCidrList('AWS_EXTERNAL_SERVICE_CIDRS', v.externalServiceCidrs),
    disableTcpEarlyDemux: v.disableTcpEarlyDemux,
    disablePodV6: v.disablePodV6,
    v6Egress,
  };
}
