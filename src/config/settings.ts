// The agent's configuration, declared once. The environment parser (agent-config.ts), the
// `vpcnetd --help` text (help.ts) and the README's table (readme-table.ts) all come from here:
// change a setting here and `npm run docs:config` carries it into the README.
import { DEFAULT_DEL_SPOOL_DIR } from '../cni/wire.ts';
import { type DocumentedVariable, unsetByDefault, withDefault } from './setting.ts';
import {
  falseOnly,
  httpUrl,
  intBetween,
  matching,
  nonNegativeInt,
  oneOf,
  positiveInt,
  text,
  trueOrFalse,
} from './value-kinds.ts';

const path = text('a file system path');

/** Every setting vpcnetd parses, in the order the docs list them. */
export const AGENT_SETTINGS = {
  agentSocket: withDefault({
    env: 'VPCNET_AGENT_SOCKET',
    kind: path,
    default: '/run/vpcnet/agent.sock',
    description: "the agent's unix socket, which the plugin calls (created 0600)",
  }),
  stateDir: withDefault({
    env: 'VPCNET_STATE_DIR',
    kind: path,
    default: '/var/lib/vpcnet',
    description: 'where the attachment ledger lives (`ledger.json`)',
  }),
  delSpoolDir: withDefault({
    env: 'VPCNET_DEL_SPOOL_DIR',
    kind: path,
    // The plugin's own default, not one derived from the state dir: both sides must agree on
    // where DELs wait while the agent is down, also when only VPCNET_STATE_DIR is set.
    default: DEFAULT_DEL_SPOOL_DIR,
    description: 'where the plugin spools DELs while the agent is down; drained in order at start',
  }),
  nodeName: unsetByDefault({
    env: 'VPCNET_NODE_NAME',
    kind: text('a node name'),
    defaultText: 'hostname',
    description: 'Kubernetes node name',
  }),
  kubeApi: unsetByDefault({
    env: 'VPCNET_KUBE_API',
    kind: httpUrl,
    defaultText: 'in-cluster, else none',
    description: 'Kubernetes API base URL (plain http in the lab); none: every pod gets regular networking',
  }),
  kubernetesServiceHost: unsetByDefault({
    env: 'KUBERNETES_SERVICE_HOST',
    kind: text('a host name or address'),
    defaultText: 'set by Kubernetes',
    description:
      "without VPCNET_KUBE_API: the in-cluster API at this host, with the pod's service-account token and CA",
  }),
  kubernetesServicePort: withDefault({
    env: 'KUBERNETES_SERVICE_PORT',
    kind: intBetween(1, 65535),
    default: 443,
    description: 'port of the in-cluster API',
  }),
  vethPrefix: withDefault({
    env: 'VPCNET_VETH_PREFIX',
    kind: matching(/^[a-z][a-z0-9]{0,3}$/, '1-4 lowercase letters/digits starting with a letter'),
    default: 'vpc',
    description: 'prefix of host veth names (the rest is a hash of the attachment key)',
  }),
  mtu: withDefault({
    env: 'VPCNET_MTU',
    kind: intBetween(576, 9001),
    default: 9001,
    description: 'pod MTU unless the CNI config sets `mtu`',
  }),
  trunkDriver: withDefault({
    env: 'VPCNET_TRUNK_DRIVER',
    kind: oneOf(['vlan', 'macvlan']),
    default: 'vlan',
    description:
      "how branch ENIs are reached on the trunk: 802.1q VLAN devices, or macvlan devices with the branch ENI's MAC where the kernel has no 8021q",
  }),
  enablePodEni: withDefault({
    env: 'ENABLE_POD_ENI',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'true: the agent asks for a trunk ENI (node label `vpc.amazonaws.com/has-trunk-attached`) and a pod the resource controller gave a branch ENI (`vpc.amazonaws.com/pod-eni`) gets it, with its own security groups; false: every pod gets regular networking',
  }),
  podSecurityGroupEnforcingMode: withDefault({
    env: 'POD_SECURITY_GROUP_ENFORCING_MODE',
    kind: oneOf(['strict', 'standard']),
    default: 'strict',
    upstream: true,
    description:
      'pods with their own security groups: strict sends all their traffic through the branch ENI; standard keeps pod-to-pod on the node and kubelet probes local',
  }),
  externalSnat: withDefault({
    env: 'AWS_VPC_K8S_CNI_EXTERNALSNAT',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description: 'true: the node does no SNAT for pod traffic leaving the VPC; an external NAT device does',
  }),
  enablePrefixDelegation: withDefault({
    env: 'ENABLE_PREFIX_DELEGATION',
    kind: falseOnly('prefix delegation is not supported yet: vpcnet assigns secondary IPs only'),
    default: false,
    upstream: true,
    description: '`true` is refused at start (not built yet)',
  }),
  warmEniTarget: withDefault({
    env: 'WARM_ENI_TARGET',
    kind: nonNegativeInt,
    default: 1,
    upstream: true,
    description: "keep this many ENIs' worth of free addresses (when no IP target is set)",
  }),
  warmIpTarget: unsetByDefault({
    env: 'WARM_IP_TARGET',
    kind: nonNegativeInt,
    defaultText: 'unset',
    upstream: true,
    description: 'keep this many free addresses (takes precedence over WARM_ENI_TARGET; 0 = unset)',
  }),
  minimumIpTarget: unsetByDefault({
    env: 'MINIMUM_IP_TARGET',
    kind: nonNegativeInt,
    defaultText: 'unset',
    upstream: true,
    description: 'keep at least this many addresses in total (0 = unset)',
  }),
  maxEni: unsetByDefault({
    env: 'MAX_ENI',
    kind: positiveInt,
    defaultText: 'instance limit',
    upstream: true,
    description: 'use at most this many ENIs',
  }),
  ipCooldownSeconds: withDefault({
    env: 'IP_COOLDOWN_PERIOD',
    kind: nonNegativeInt,
    default: 30,
    upstream: true,
    description: 'seconds a freed address waits before reuse (kept across restarts)',
  }),
  addWaitSeconds: withDefault({
    env: 'VPCNET_ADD_WAIT_SECONDS',
    kind: positiveInt,
    default: 20,
    description: 'seconds an ADD waits for the pool to grow when no address is free',
  }),
  reconcileSeconds: withDefault({
    env: 'VPCNET_RECONCILE_SECONDS',
    kind: nonNegativeInt,
    default: 10,
    description:
      'seconds between reconcile passes (drift repair, GC of what no attachment owns); 0 turns the loop off (one pass still runs at start)',
  }),
  ec2SyncSeconds: withDefault({
    env: 'VPCNET_EC2_SYNC_SECONDS',
    kind: positiveInt,
    default: 60,
    description:
      "seconds between comparisons of the pool with EC2's DescribeNetworkInterfaces (also soon after a failed pool change): outside changes are adopted, gone ENIs dropped",
  }),
  ec2StaleSeconds: withDefault({
    env: 'VPCNET_EC2_STALE_SECONDS',
    kind: positiveInt,
    default: 60,
    description:
      'how stale an EC2 describe may be: a difference counts once two describes this far apart show it, and never about what vpcnet changed this recently',
  }),
  logLevel: withDefault({
    env: 'VPCNET_LOG_LEVEL',
    kind: oneOf(['debug', 'info', 'warn', 'error']),
    default: 'info',
    description: 'least severe level logged (JSON lines on stderr)',
  }),
} as const;

/** Variables the cloud driver (AWS SDK, IMDS client) reads itself: documented here, parsed there. */
export const CLOUD_DRIVER_VARIABLES: readonly DocumentedVariable[] = [
  {
    env: 'AWS_ENDPOINT_URL_EC2',
    defaultText: 'regional endpoint',
    description: 'read by the cloud driver: the EC2 API endpoint (the lab points it at the emulator)',
    upstream: false,
  },
  {
    env: 'AWS_EC2_METADATA_SERVICE_ENDPOINT',
    defaultText: 'http://169.254.169.254',
    description: 'read by the cloud driver: the IMDSv2 endpoint (the lab points it at the emulator)',
    upstream: false,
  },
  {
    env: 'AWS_REGION',
    defaultText: "the instance's, from IMDS",
    description: 'read by the cloud driver: the region of the EC2 API',
    upstream: false,
  },
];

/** Every variable the docs list, in order. */
export const DOCUMENTED_VARIABLES: readonly DocumentedVariable[] = [
  ...Object.values(AGENT_SETTINGS),
  ...CLOUD_DRIVER_VARIABLES,
];
