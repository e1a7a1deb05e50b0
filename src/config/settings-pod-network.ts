// The agent's settings for what a pod's network looks like beyond its address: MTUs, the pod IP
// annotation, routes to external service CIDRs, and what upstream's init container and chained
// plugins did (early demux, IPv6 inside IPv4 pods): part of AGENT_SETTINGS (settings.ts), in the
// docs' order. Derived values: pod-network-config.ts.
import { unsetByDefault, withDefault } from './setting.ts';
import { intBetween, text, trueOrFalse } from './value-kinds.ts';

/** Upstream's bounds for both MTUs (IPv4's minimum; IPv6 needs 1280, checked with the mode). */
const mtu = intBetween(576, 9001);

export const POD_NETWORK_SETTINGS = {
  mtu: unsetByDefault({
    env: 'VPCNET_MTU',
    kind: mtu,
    defaultText: 'unset',
    description: "vpcnet's older name for both MTUs below at once; refused together with either of them",
  }),
  eniMtu: unsetByDefault({
    env: 'AWS_VPC_ENI_MTU',
    kind: mtu,
    defaultText: '9001',
    upstream: true,
    description:
      "MTU of the ENI links vpcnet configures (secondary ENIs, the trunk); the primary ENI's link keeps the node's own",
  }),
  podMtu: unsetByDefault({
    env: 'POD_MTU',
    kind: mtu,
    defaultText: 'AWS_VPC_ENI_MTU',
    upstream: true,
    description:
      "MTU of pods' interfaces (veths, branch devices) unless the CNI config sets `mtu`, which wins per network",
  }),
  annotatePodIp: withDefault({
    env: 'ANNOTATE_POD_IP',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "true: after an ADD the agent writes the pod's address into its annotation `vpc.amazonaws.com/pod-ips` (policy engines such as Calico read it before the kubelet reports the pod's IP) and a DEL empties it; needs the Kubernetes API and pods `patch`. Best effort, in the background: no ADD waits for it or fails by it",
  }),
  externalServiceCidrs: unsetByDefault({
    env: 'AWS_EXTERNAL_SERVICE_CIDRS',
    kind: text('comma-separated IPv4 CIDRs'),
    defaultText: 'none',
    upstream: true,
    description:
      "comma-separated IPv4 CIDRs that pods on secondary ENIs reach through the main routing table (the primary ENI): a rule `to <cidr> lookup main` each, at priority 1535, before the pods' ENI rules (1536); rules at 1535 for CIDRs no longer listed go at start",
  }),
  disableTcpEarlyDemux: withDefault({
    env: 'DISABLE_TCP_EARLY_DEMUX',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "true: `vpcnetctl install` sets net.ipv4.tcp_early_demux=0 on the node (kubelet probes of branch-ENI pods in strict mode; the install container must be privileged, as with upstream's init); the agent changes no sysctl and warns at start when it is not 0",
  }),
  disablePodV6: withDefault({
    env: 'DISABLE_POD_V6',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "true: `vpcnetctl install` chains the reference `tuning` plugin setting net.ipv6.conf.{all,default,lo}.disable_ipv6=1 in every pod's namespace, as upstream's conflist does; refused with ENABLE_IPv6 or ENABLE_V6_EGRESS",
  }),
  enableV6Egress: withDefault({
    env: 'ENABLE_V6_EGRESS',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "IPv4 mode: each pod also gets an address of fd00::ac:0/118 on a second interface `v6if0`, and its IPv6 traffic leaves SNATed to the node's IPv6 address (needs net.ipv6.conf.all.forwarding=1, which `vpcnetctl install` sets with it; a node without an IPv6 address gets no IPv6 egress, with a warning)",
  }),
} as const;
