// The agent's settings for the capacity the cluster can see (docs/design.md, "Capacity"): the
// subnet census and what the node says of its own readiness. Part of AGENT_SETTINGS (settings.ts).
import { withDefault } from './setting.ts';
import { intBetween, matching, oneOf } from './value-kinds.ts';

export const CAPACITY_SETTINGS = {
  subnetCensus: withDefault({
    env: 'VPCNET_SUBNET_CENSUS',
    kind: oneOf(['place', 'observe', 'off']),
    default: 'place',
    description:
      "the cluster's census of free /28s per subnet (needs the Kubernetes API): one agent, elected on a Lease, reads every subnet the agents use from EC2 once per census period (GetSubnetCidrReservations and one DescribeNetworkInterfaces page) and publishes it on the Lease, where the others read it; `place` also asks no prefix of a subnet it shows without a free /28, ranks subnet discovery by free /28s in prefix mode, and names secondary IPs inside already-broken /28s (PrivateIpAddress.N) instead of letting EC2 pick them; `observe` only reports it (metrics, `vpcnetctl status`); `off`: none, as upstream",
  }),
  subnetCensusLease: withDefault({
    env: 'VPCNET_SUBNET_CENSUS_LEASE',
    kind: matching(
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/,
      'NAMESPACE/NAME of a Lease',
    ),
    default: 'kube-system/vpcnet-subnet-census',
    description:
      "the coordination.k8s.io Lease the census is elected on and published in (the agent's Role grants get, create and update on it)",
  }),
  subnetCensusSeconds: withDefault({
    env: 'VPCNET_SUBNET_CENSUS_SECONDS',
    kind: intBetween(60, 3600),
    default: 300,
    description: "seconds a subnet's census is used before the elected agent reads EC2 for it again",
  }),
  nodeReadiness: withDefault({
    env: 'VPCNET_NODE_READINESS',
    kind: oneOf(['condition', 'taint', 'off']),
    default: 'condition',
    description:
      "what the agent says of its node's capacity (needs the Kubernetes API): `condition` keeps the Node condition `vpcnet.io/NetworkReady` current (False with the reason while no address is free and the pool cannot grow: `PoolEmpty:SubnetExhausted`, `PoolEmpty:MaxEnis`, `Ec2Unauthorized`, `Ec2Budget`, …) and writes no taint, for clusters whose taints are owned by one controller (node-readiness-controller); `taint` also puts `vpcnet.io/ip-exhausted:NoSchedule` on the node while that lasts and takes it off once a warm target's worth is free or the pool can grow again (a pod that tolerates every taint still lands there); `off`: neither",
  }),
  poolRetryMaxSeconds: withDefault({
    env: 'VPCNET_POOL_RETRY_MAX_SECONDS',
    kind: intBetween(1, 600),
    default: 60,
    description:
      'the longest the pool waits before trying again after a failed pass (a subnet out of addresses, EC2 refusing or throttling; the wait doubles from 1 s up to this): how soon a node whose subnet gets addresses back grows again and, in `taint` mode, loses `vpcnet.io/ip-exhausted`. Each try is an EC2 call of every blocked node',
  }),
} as const;
