// The agent's settings for its EC2 client (rate limit, retries, the periodic sync), and the
// variables the cloud driver reads itself: part of the documented settings (settings.ts), in the
// docs' order.
import { type DocumentedVariable, withDefault } from './setting.ts';
import { intBetween, matching, positiveInt, positiveNumber } from './value-kinds.ts';

const LEASE_OR_OFF = /^(off|[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/;

export const EC2_SETTINGS = {
  // EC2 throttles per account and region with a token bucket per action (EC2 API reference,
  // "Request throttling"): describes 100 tokens refilled at 20/s each, mutating actions 50 at 5/s,
  // AssignPrivateIpAddresses, CreateNetworkInterface, DeleteNetworkInterface,
  // ModifyNetworkInterfaceAttribute and UnassignPrivateIpAddresses 100 at 5/s. Every node of a
  // cluster shares them, so the agent learns its share (ec2-budget.ts): a rate per action that
  // halves at each RequestLimitExceeded and climbs back while EC2 answers. These two settings are
  // only the ceiling of that rate, per action and for the agent in all: high enough that a node
  // alone grows at EC2's own speed (a full m5.4xlarge, about 32 calls over four actions, in about
  // 2 s), low enough that a node never sends more than EC2 refills an action for the whole account.
  ec2Qps: withDefault({
    env: 'VPCNET_EC2_QPS',
    kind: positiveNumber,
    default: 10,
    description:
      "the most EC2 calls per second this agent makes, per action and in all (fractions allowed; retries count). Below it the agent's rate per action adapts to EC2's account-wide limits: it halves at each RequestLimitExceeded and climbs back while EC2 answers, so 10 nodes go at this speed and 1,000 share EC2's refill rates without configuration; lower it to keep the agents well below what other clients of the account need",
  }),
  ec2Burst: withDefault({
    env: 'VPCNET_EC2_BURST',
    kind: positiveInt,
    default: 20,
    description:
      'EC2 calls this agent may make at once after a quiet time at the ceiling rate (its burst shrinks with its rate while EC2 throttles): enough to grow a node from its start to a full instance without waiting',
  }),
  ec2MaxAttempts: withDefault({
    env: 'VPCNET_EC2_MAX_ATTEMPTS',
    kind: intBetween(1, 20),
    default: 5,
    description:
      "attempts per EC2 call, the first included, that fail with a 5xx or network error (each retried after an exponential backoff with full jitter); a throttled attempt (RequestLimitExceeded) does not use one up: it is retried when its action's halved rate gives the next token (after a jittered pause); each retry takes a token; no retry starts a minute after the call began",
  }),
  ec2FleetLease: withDefault({
    env: 'VPCNET_EC2_FLEET_LEASE',
    kind: matching(LEASE_OR_OFF, 'NAMESPACE/NAME of a Lease, or off'),
    default: 'kube-system/vpcnet-ec2-throttle',
    description:
      "the coordination.k8s.io Lease on which the cluster's agents slow down together (needs the Kubernetes API; the agent's Role grants get, create and update on it): the first agent EC2 throttles on an action writes a 5 s hold of it there; every agent reads the Lease every 15 s (every 2 s while it starts; jittered) and right after a throttle of its own; while an action is held its calls that no pod waits for (top-ups, describes, sweeps, releases) wait, and releases wait a minute after any hold; at all times those calls are paced to the agent's share of half of EC2's published refill for the action (nodes running the agent, from VPCNET_EC2_FLEET_DAEMONSET, × 2 / refill seconds between one agent's calls: 0.4 s at 1 node, 40 s at 100, 400 s at 1,000 for a 5/s action), a pace that doubles once in each round in which a paced call was throttled, and halves back every 30 s after; while an ADD waits for an address the pool's calls are neither held nor paced, nor is a starting agent paced; `off`: each agent learns its share from its own throttling only",
  }),
  ec2FleetDaemonSet: withDefault({
    env: 'VPCNET_EC2_FLEET_DAEMONSET',
    kind: matching(
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/,
      'NAMESPACE/NAME of a DaemonSet',
    ),
    default: 'kube-system/vpcnet',
    description:
      "the agent's DaemonSet, whose status.desiredNumberScheduled (read every 5 minutes; the agent's Role grants get on it) is the count of agents sharing EC2's buckets, for the pace of VPCNET_EC2_FLEET_LEASE; unreadable: the agent paces as if alone",
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
} as const;

/** Variables the cloud driver (its EC2 client, credential sources and IMDS client) reads itself: documented here, parsed there. */
export const CLOUD_DRIVER_VARIABLES: readonly DocumentedVariable[] = [
  {
    env: 'AWS_ENDPOINT_URL_EC2',
    defaultText: 'regional endpoint',
    description: 'read by the cloud driver: the EC2 API endpoint (the lab points it at the emulator)',
    upstream: false,
  },
  {
    env: 'AWS_EC2_ENDPOINT',
    defaultText: 'unset',
    description:
      "read by the cloud driver: upstream's own name for the EC2 API endpoint (an http(s) URL); it wins over AWS_ENDPOINT_URL_EC2, as in aws-node",
    upstream: true,
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
  {
    env: 'AWS_PROFILE',
    defaultText: 'default',
    description:
      "read by the cloud driver's credential chain: the profile of the shared config and credentials files whose static keys (or web_identity_token_file with role_arn) sign the EC2 calls; when set it wins over the environment's keys and IRSA, as in aws-node's SDK, and a profile neither file has, or one using credential_process, source_profile, credential_source or SSO, stops the agent at start. Unset: the default profile, after the environment's keys and IRSA, when it holds credentials",
    upstream: true,
  },
  {
    env: 'AWS_SHARED_CREDENTIALS_FILE',
    defaultText: '~/.aws/credentials',
    description:
      "read by the cloud driver's credential chain: the shared credentials file (profiles as `[NAME]`)",
    upstream: true,
  },
  {
    env: 'AWS_CONFIG_FILE',
    defaultText: '~/.aws/config',
    description:
      "read by the cloud driver's credential chain: the shared config file (profiles as `[profile NAME]`); the credentials file wins where both set a key",
    upstream: true,
  },
];
