// The agent's settings for SNAT, NodePort support and the address modes (prefix delegation, IPv6,
// custom networking, subnet discovery): part of AGENT_SETTINGS (settings.ts), in the docs' order.
import { unsetByDefault, withDefault } from './setting.ts';
import { markBits, nonNegativeInt, oneOf, positiveInt, text, trueOrFalse } from './value-kinds.ts';

export const ADDRESS_MODE_SETTINGS = {
  externalSnat: withDefault({
    env: 'AWS_VPC_K8S_CNI_EXTERNALSNAT',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description: 'true: the node does no SNAT for pod traffic leaving the VPC; an external NAT device does',
  }),
  nodePortSupport: withDefault({
    env: 'AWS_VPC_CNI_NODE_PORT_SUPPORT',
    kind: trueOrFalse,
    default: true,
    upstream: true,
    description:
      'true: connections arriving on the primary ENI for a node address are marked in conntrack and their replies from pods leave through the primary ENI (main table), so NodePorts reach pods on secondary ENIs; needs rp_filter 0 or 2 on the primary ENI (the agent warns)',
  }),
  connmark: withDefault({
    env: 'AWS_VPC_K8S_CNI_CONNMARK',
    kind: markBits,
    default: 0x80,
    defaultText: '0x80',
    upstream: true,
    description:
      'the conntrack/packet mark bits NodePort support uses, and the fwmark of its policy rule (priority 1024)',
  }),
  // SNAT choices: upstream's names and meanings, mapped onto vpcnet's nftables table.
  excludeSnatCidrs: unsetByDefault({
    env: 'AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS',
    kind: text('comma-separated IPv4 CIDRs'),
    defaultText: 'none',
    upstream: true,
    description: 'comma-separated IPv4 CIDRs pod traffic reaches without SNAT, besides the VPC CIDRs',
  }),
  randomizeSnat: withDefault({
    env: 'AWS_VPC_K8S_CNI_RANDOMIZESNAT',
    kind: oneOf(['prng', 'hashrandom', 'none']),
    default: 'prng',
    upstream: true,
    description:
      "source ports of SNATed connections: prng = nftables' `fully-random` (iptables' --random-fully), hashrandom = `random` (--random), none = no flag",
  }),
  vpcCidrRefreshSeconds: withDefault({
    env: 'VPCNET_VPC_CIDR_REFRESH_SECONDS',
    kind: nonNegativeInt,
    default: 60,
    description:
      "seconds between reads of the VPC's CIDR blocks from instance metadata; a CIDR added to the VPC stops being SNATed without a restart (0 = read once at start)",
  }),
  enablePrefixDelegation: withDefault({
    env: 'ENABLE_PREFIX_DELEGATION',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'true: the pool holds /28 prefixes on its ENIs and pods get addresses out of them (16 per ENI slot); when the subnet has no free /28 it falls back to secondary IPs and returns to prefixes when it can. Pods keep their addresses when a node switches modes',
  }),
  enableIpv6: withDefault({
    env: 'ENABLE_IPv6',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'true: pods get IPv6 addresses out of a /80 prefix on the primary ENI (needs ENABLE_PREFIX_DELEGATION=true, as upstream); no IPv4 pod addresses, no SNAT of IPv6',
  }),
  enableV4Egress: withDefault({
    env: 'ENABLE_V4_EGRESS',
    kind: trueOrFalse,
    default: true,
    upstream: true,
    description:
      "IPv6 mode: each pod also gets a node-local IPv4 address (169.254.172.0/22) on a second interface, and its IPv4 traffic leaves SNATed to the node's primary IPv4 address",
  }),
  warmPrefixTarget: withDefault({
    env: 'WARM_PREFIX_TARGET',
    kind: nonNegativeInt,
    default: 1,
    upstream: true,
    description:
      'prefix mode: keep this many wholly free /28 prefixes (WARM_IP_TARGET or MINIMUM_IP_TARGET, when set, take precedence, met in whole prefixes); 0 with neither IP target is refused, as upstream does not support it',
  }),
  // Where new ENIs go (src/ipam/eni-placement*.ts): custom networking wins over subnet discovery.
  customNetworkCfg: withDefault({
    env: 'AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "true: new ENIs go into the subnet and security groups of the node's ENIConfig (`crd.k8s.amazonaws.com/v1alpha1`; none listed: the primary ENI's), and the primary ENI carries no pods; needs the Kubernetes API. A missing ENIConfig, or a subnet that is missing or in another zone, blocks the pool's growth with that reason (state, log, ADD code 11)",
  }),
  eniConfigLabelDef: withDefault({
    env: 'ENI_CONFIG_LABEL_DEF',
    kind: text('a node label key'),
    default: 'k8s.amazonaws.com/eniConfig',
    upstream: true,
    description:
      'node label whose value names the ENIConfig (e.g. `topology.kubernetes.io/zone`); the annotation wins over it; neither: the ENIConfig `default`',
  }),
  eniConfigAnnotationDef: withDefault({
    env: 'ENI_CONFIG_ANNOTATION_DEF',
    kind: text('a node annotation key'),
    default: 'k8s.amazonaws.com/eniConfig',
    upstream: true,
    description: "node annotation whose value names the ENIConfig (wins over ENI_CONFIG_LABEL_DEF's label)",
  }),
  enableSubnetDiscovery: withDefault({
    env: 'ENABLE_SUBNET_DISCOVERY',
    kind: trueOrFalse,
    default: true,
    upstream: true,
    description:
      "true: a new ENI goes into the subnet with the most free addresses, with the primary ENI's security groups, among the subnets of the node's VPC and zone that their tags offer, as upstream 1.22.1+: the primary ENI's subnet unless tagged `kubernetes.io/role/cni=0`, any other only when tagged `kubernetes.io/role/cni` with another value (`1`), and with `CLUSTER_NAME` set, a subnet tagged `cni.networking.k8s.aws/cluster/<name>` only for the clusters named (an untagged primary subnet whatever they say). The ENIs of a subnet tagged 0 (or another cluster's) drain: they lend no new address, give free ones back, and are freed once no pod uses them (the primary ENI stays). A subnet with no free /28 in prefix mode sends prefixes to an ENI in the next subnet. false: always the primary ENI's subnet, refused while it is tagged 0",
  }),
  subnetTagsSeconds: withDefault({
    env: 'VPCNET_SUBNET_TAGS_SECONDS',
    kind: positiveInt,
    default: 300,
    description:
      "with ENABLE_SUBNET_DISCOVERY: seconds between reads of the tags of the subnets of the node's VPC and zone (one paginated DescribeSubnets, also at start) that decide which ENIs drain; a tag set or removed takes effect at the next read (upstream reads them when it starts)",
  }),
} as const;
