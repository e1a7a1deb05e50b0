// The agent's settings for its EC2 client (rate limit, retries, the periodic sync), and the
// variables the cloud driver reads itself: part of the documented settings (settings.ts), in the
// docs' order.
import { type DocumentedVariable, withDefault } from './setting.ts';
import { intBetween, positiveInt, positiveNumber } from './value-kinds.ts';

export const EC2_SETTINGS = {
  // EC2 throttles per account and region with token buckets (EC2 API reference, "Request
  // throttling"): non-mutating actions (DescribeNetworkInterfaces, DescribeSubnets,
  // DescribeInstanceTypes) 100 tokens refilled at 20/s each; mutating actions 50 at 5/s
  // (AssignPrivateIpAddresses, CreateNetworkInterface, DeleteNetworkInterface and
  // ModifyNetworkInterfaceAttribute 100 at 5/s). The ten actions vpcnet uses refill at about
  // 95 calls/s together. 1,000 agents each held to 0.08/s ask at most 80/s when all are busy at
  // once, under that total. The bucket is large (60) because pods start in bursts: growing a node
  // from its start to a full m5.4xlarge (8 ENIs: create, attach, modify, assign each, plus
  // describes) takes about 40 calls, and a burst of pods after churn needs a dozen more; a bucket
  // spent at start would make that burst wait minutes, one call per refill. Nodes bursting at the
  // same moment are absorbed by EC2's own
  // per-action buckets and the jittered retries.
  ec2Qps: withDefault({
    env: 'VPCNET_EC2_QPS',
    kind: positiveNumber,
    default: 0.08,
    description:
      "sustained EC2 calls per second of this agent (fractions allowed; retries count). EC2's limit is per account and region, shared by all nodes: the default keeps 1,000 busy nodes within EC2's documented refill rates (~95/s for the actions vpcnet uses); a smaller cluster may raise it, about 80 / number of nodes",
  }),
  ec2Burst: withDefault({
    env: 'VPCNET_EC2_BURST',
    kind: positiveInt,
    default: 60,
    description:
      "EC2 calls this agent may make at once after a quiet time (its token bucket's size): enough to grow a node's pool to its largest without waiting, so that pods can start in bursts",
  }),
  ec2MaxAttempts: withDefault({
    env: 'VPCNET_EC2_MAX_ATTEMPTS',
    kind: intBetween(1, 20),
    default: 5,
    description:
      'attempts per EC2 call, the first included: throttling (RequestLimitExceeded), 5xx and network errors are retried with exponential backoff and full jitter, each retry taking a token; no retry starts a minute after the call began',
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
