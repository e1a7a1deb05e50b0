// The agent's configuration, declared once. The environment parser (agent-config.ts), the
// `vpcnetd --help` text (help.ts) and the README's table (readme-table.ts) all come from here:
// change a setting here and `npm run docs:config` carries it into the README.
import { TRUNK_DRIVERS } from '../infra/trunk-driver.ts';
import { DEFAULT_DEL_SPOOL_DIR } from '../spool/format.ts';
import { type DocumentedVariable, unsetByDefault, withDefault } from './setting.ts';
import { ADDRESS_MODE_SETTINGS } from './settings-address-modes.ts';
import { CAPACITY_SETTINGS } from './settings-capacity.ts';
import { CLOUD_ACCESS_SETTINGS } from './settings-cloud-access.ts';
import { CLOUD_DRIVER_VARIABLES, EC2_SETTINGS } from './settings-ec2.ts';
import { POD_NETWORK_SETTINGS } from './settings-pod-network.ts';
import {
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
  myNodeName: unsetByDefault({
    env: 'MY_NODE_NAME',
    kind: text('a node name'),
    defaultText: 'unset',
    upstream: true,
    description:
      "upstream's name for the node name (the DaemonSet sets it from `spec.nodeName`); VPCNET_NODE_NAME wins when both are set",
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
  // MTUs, the pod IP annotation, external service CIDRs, IPv6 in IPv4 pods (settings-pod-network.ts).
  ...POD_NETWORK_SETTINGS,
  trunkDriver: withDefault({
    env: 'VPCNET_TRUNK_DRIVER',
    kind: oneOf(TRUNK_DRIVERS),
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
      "true: the agent asks the VPC resource controller for a trunk ENI (its node's CNINode lists `SecurityGroupsForPods`, and `CustomNetworking` with custom networking; the node label `vpc.amazonaws.com/has-trunk-attached` too) and a pod the controller gave a branch ENI (`vpc.amazonaws.com/pod-eni`) gets it, with its own security groups; false: every pod gets regular networking, and the agent takes those features off its CNINode",
  }),
  podSecurityGroupEnforcingMode: withDefault({
    env: 'POD_SECURITY_GROUP_ENFORCING_MODE',
    kind: oneOf(['strict', 'standard']),
    default: 'strict',
    upstream: true,
    description:
      'pods with their own security groups: strict sends all their traffic through the branch ENI; standard keeps pod-to-pod on the node and kubelet probes local',
  }),
  // SNAT and the address modes (settings-address-modes.ts).
  ...ADDRESS_MODE_SETTINGS,
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
  minEniLifetimeSeconds: withDefault({
    env: 'VPCNET_MIN_ENI_LIFETIME_SECONDS',
    kind: nonNegativeInt,
    default: 60,
    description:
      "an ENI attached (or found at start) less than this ago is not freed, so a pool that just grew does not flap (the upstream's fixed minute)",
  }),
  clusterName: unsetByDefault({
    env: 'CLUSTER_NAME',
    kind: text('a cluster name'),
    defaultText: 'unset',
    upstream: true,
    description:
      'the ENIs vpcnet creates are tagged `cluster.k8s.amazonaws.com/name` with it; the leaked-ENI sweep then leaves ENIs of another cluster alone',
  }),
  additionalEniTags: unsetByDefault({
    env: 'ADDITIONAL_ENI_TAGS',
    kind: text('a JSON object of tag keys to string values'),
    defaultText: 'none',
    upstream: true,
    description:
      'extra tags on the ENIs vpcnet creates, e.g. `{"team":"net"}`; a key containing `k8s.amazonaws.com`, starting with `aws:`, or one vpcnet sets itself is refused at start',
  }),
  disableLeakedEniCleanup: withDefault({
    env: 'DISABLE_LEAKED_ENI_CLEANUP',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      "true: no sweep for this node's detached vpcnet ENIs (ENIs the ledger records as being freed are still finished)",
  }),
  leakedEniGraceSeconds: withDefault({
    env: 'VPCNET_LEAKED_ENI_GRACE_SECONDS',
    kind: positiveInt,
    default: 300,
    description:
      'the leaked-ENI sweep deletes a detached vpcnet ENI only once it is this old (its `node.k8s.amazonaws.com/createdAt` tag, else first seen)',
  }),
  leakedEniSweepSeconds: withDefault({
    env: 'VPCNET_LEAKED_ENI_SWEEP_SECONDS',
    kind: positiveInt,
    default: 3600,
    description: 'seconds between leaked-ENI sweeps (the first runs at start)',
  }),
  reconcileSeconds: withDefault({
    env: 'VPCNET_RECONCILE_SECONDS',
    kind: nonNegativeInt,
    default: 10,
    description:
      'seconds between reconcile passes (drift repair, GC of what no attachment owns); 0 turns the loop off (one pass still runs at start)',
  }),
  deadPodGc: withDefault({
    env: 'VPCNET_DEAD_POD_GC',
    kind: trueOrFalse,
    default: true,
    description:
      'true: an attachment whose pod the Kubernetes API has not known for the grace period and whose network namespace is gone is removed as its DEL would be (needs the API; a namespace that exists is never collected)',
  }),
  deadPodGcGraceSeconds: withDefault({
    env: 'VPCNET_DEAD_POD_GC_GRACE_SECONDS',
    kind: positiveInt,
    default: 300,
    description:
      'seconds a pod must be seen absent from the API, continuously, before the background GC collects its attachment',
  }),
  // The EC2 client's rate limit, retries and sync (settings-ec2.ts).
  ...EC2_SETTINGS,
  // The subnet census and the node's readiness (settings-capacity.ts).
  ...CAPACITY_SETTINGS,
  // Locked-down VPCs, which ENIs are managed, credentials (settings-cloud-access.ts).
  ...CLOUD_ACCESS_SETTINGS,
  logLevel: withDefault({
    env: 'VPCNET_LOG_LEVEL',
    kind: oneOf(['debug', 'info', 'warn', 'error']),
    default: 'info',
    description: 'least severe level logged (JSON lines on stderr)',
  }),
  disableMetrics: withDefault({
    env: 'DISABLE_METRICS',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description: 'true: no Prometheus metrics endpoint',
  }),
  metricsPort: withDefault({
    env: 'VPCNET_METRICS_PORT',
    kind: intBetween(1, 65535),
    default: 61678,
    description:
      "port of the Prometheus metrics endpoint (`/metrics`, on every address of the node's network namespace; upstream's port)",
  }),
  disableIntrospection: withDefault({
    env: 'DISABLE_INTROSPECTION',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description: 'true: no read-only introspection endpoint over HTTP (the socket still answers `vpcnetctl`)',
  }),
  introspectionBindAddress: withDefault({
    env: 'INTROSPECTION_BIND_ADDRESS',
    // Loopback only: it shows the node's whole state without authentication.
    kind: matching(
      /^(127\.0\.0\.1|localhost|\[::1\]):([1-9][0-9]{0,4})$/,
      'a loopback HOST:PORT (127.0.0.1, localhost or [::1])',
    ),
    default: '127.0.0.1:61679',
    upstream: true,
    description:
      'where the read-only introspection endpoint listens (loopback only: it shows the whole node without authentication)',
  }),
  startupTaint: withDefault({
    env: 'VPCNET_STARTUP_TAINT',
    kind: matching(
      /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/,
      'a taint key',
    ),
    default: 'node.vpcnet.io/agent-not-ready',
    description:
      'taint key the agent removes from its node once it serves and its pool has addresses (register nodes with it so that no pod lands before the CNI can serve it); absent taint: nothing to do',
  }),
  adoptAwsNode: withDefault({
    env: 'VPCNET_ADOPT_AWS_NODE',
    kind: trueOrFalse,
    default: true,
    description:
      "true: on a start without a ledger where aws-node's IPAM checkpoint exists, the agent adopts aws-node's live pods in place (each becomes a vpcnet attachment with its veth, address, routes and rules as found; DEL and CHECK work on it) and removes what aws-node made that nothing uses (its iptables chains and rules, its `aws-cni` nftables table, its ENIs' source rules); it refuses to start while aws-node's ipamd listens on 127.0.0.1:50051",
  }),
  awsNodeCheckpoint: withDefault({
    env: 'VPCNET_AWS_NODE_CHECKPOINT',
    kind: path,
    default: '/var/run/aws-node/ipam.json',
    description: "aws-node's IPAM checkpoint (its `vpc-cni-ipam/1` format), read once when adopting its pods",
  }),
  awsNodeVethPrefix: withDefault({
    env: 'AWS_VPC_K8S_CNI_VETHPREFIX',
    kind: matching(/^[A-Za-z0-9]{1,4}$/, '1-4 letters or digits'),
    default: 'eni',
    upstream: true,
    description:
      "the prefix aws-node gave its pods' host veths: adoption finds aws-node's pods by it (vpcnet's own veths use VPCNET_VETH_PREFIX)",
  }),
} as const;

/**
 * aws-node variables vpcnet does not honour and does not refuse (their upstream defaults are what
 * most manifests carry): the agent names each one it finds set at start, so that none is ignored
 * silently (README, "Switching from aws-node").
 */
export const UNHONOURED_UPSTREAM_VARIABLES: Readonly<Record<string, string>> = {
  AWS_VPC_K8S_CNI_LOGLEVEL: 'renamed: VPCNET_LOG_LEVEL',
};

/** The unhonoured aws-node variables set in `env`, each with why it has no effect. */
export function unhonouredUpstreamVariables(
  env: Readonly<Record<string, string | undefined>>,
): { variable: string; reason: string }[] {
  return Object.entries(UNHONOURED_UPSTREAM_VARIABLES)
    .filter(([name]) => env[name] !== undefined)
    .map(([variable, reason]) => ({ variable, reason }));
}

/** Every variable the docs list, in order. */
export const DOCUMENTED_VARIABLES: readonly DocumentedVariable[] = [
  ...Object.values(AGENT_SETTINGS),
  ...CLOUD_DRIVER_VARIABLES,
];
