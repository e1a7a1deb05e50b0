// The agent's configuration, parsed once from the environment at start (the table is
// settings.ts). Everything inside the agent trusts these types.

import { hostname } from 'node:os';
import type { TrunkDriver } from '../infra/trunk-driver.ts';
import { VPCNET_OWN_TAG_KEYS } from '../ipam/enis/eni-ownership.ts';
import { type EniTagOptions, parseAdditionalEniTags } from '../ipam/enis/eni-tags.ts';
import type { LeakedEniCleanup } from '../ipam/enis/leaked-enis.ts';
import { usesIpTargets, type WarmPoolTargets } from '../ipam/pool/targets.ts';
import type { EniConfigKeys } from '../pods/eni-config.ts';
import type { KubeApiConfig } from '../pods/kube-api-config.ts';
import type { LeaseName } from '../pods/lease/lease.ts';
import { parseCidrList } from './cidr-list.ts';
import { type CloudAccess, cloudAccessOf, type EniManagement } from './cloud-access.ts';
import { ConfigError } from './config-error.ts';
import { type PodNetworkConfig, podNetworkConfig } from './pod-network-config.ts';
import { type Env, readSettings } from './setting.ts';
import { AGENT_SETTINGS } from './settings.ts';

export interface AgentConfig {
  readonly agentSocket: string;
  readonly stateDir: string;
  readonly delSpoolDir: string;
  readonly nodeName: string;
  /** undefined = no API (cnitool, podman): regular networking only. */
  readonly kubeApi: KubeApiConfig | undefined;
  readonly vethPrefix: string;
  /** MTUs, the pod IP annotation, external service CIDRs, IPv6 in IPv4 pods (pod-network-config.ts). */
  readonly podNetwork: PodNetworkConfig;
  /** How branch ENIs are reached on the trunk link. */
  readonly trunkDriver: TrunkDriver;
  /**
   * ENABLE_POD_ENI (upstream name): the node asks for a trunk ENI, and a pod the resource
   * controller annotated with a branch ENI gets it (security groups for pods).
   */
  readonly enablePodEni: boolean;
  /** POD_SECURITY_GROUP_ENFORCING_MODE (upstream name and default): routing of branch-ENI pods. */
  readonly podSecurityGroupEnforcingMode: 'strict' | 'standard';
  /** AWS_VPC_K8S_CNI_EXTERNALSNAT: an external NAT device, not the node, translates pod traffic. */
  readonly externalSnat: boolean;
  /** AWS_VPC_CNI_NODE_PORT_SUPPORT and AWS_VPC_K8S_CNI_CONNMARK (upstream names and defaults). */
  readonly nodePort: { readonly enabled: boolean; readonly mark: number };
  /** SNAT choices: excluded destinations, port randomization, VPC CIDR refresh (0 = off). */
  readonly snat: {
    readonly excludeCidrs: readonly string[];
    readonly randomize: 'prng' | 'hashrandom' | 'none';
    readonly vpcCidrRefreshSeconds: number;
  };
  readonly targets: WarmPoolTargets;
  /**
   * Where new ENIs go: the primary ENI's subnet, subnet discovery (ENABLE_SUBNET_DISCOVERY), or
   * the node's ENIConfig (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG, which wins, as upstream).
   */
  readonly eniPlacement:
    | { readonly mode: 'primary' | 'discovery' }
    | ({ readonly mode: 'custom' } & EniConfigKeys);
  /** VPCNET_SUBNET_TAGS_SECONDS: how often subnet discovery reads which subnets drain. */
  readonly subnetTagsSeconds: number;
  /** ENABLE_PREFIX_DELEGATION and WARM_PREFIX_TARGET (upstream names and meanings). */
  readonly prefixMode: { readonly enabled: boolean; readonly warmPrefixTarget: number };
  /** ENABLE_IPv6 and ENABLE_V4_EGRESS (upstream names and meanings): IPv6 pods out of a /80. */
  readonly ipv6: { readonly enabled: boolean; readonly v4Egress: boolean };
  /** CLUSTER_NAME and ADDITIONAL_ENI_TAGS (upstream names): tags of the ENIs vpcnet creates. */
  readonly eniTags: EniTagOptions;
  /** An ENI attached less than this ago is not freed (ms). */
  readonly minEniLifetimeMs: number;
  /** DISABLE_LEAKED_ENI_CLEANUP (upstream name) and the sweep's grace and interval; off without provisioning. */
  readonly leakedEniCleanup: LeakedEniCleanup;
  /** ENABLE_IMDS_ONLY_MODE, DISABLE_NETWORK_RESOURCE_PROVISIONING, AWS_EC2_METADATA_DISABLED (upstream names). */
  readonly cloudAccess: CloudAccess;
  /** MANAGE_UNTAGGED_ENI and AWS_MANAGE_ENIS_NON_SCHEDULABLE (upstream names). */
  readonly eniManagement: EniManagement;
  /** Seconds an ADD may wait for the pool to grow when it has no free address. */
  readonly addWaitSeconds: number;
  /** Seconds between reconcile passes (drift repair, GC); 0 = no loop (one pass still runs at start). */
  readonly reconcileSeconds: number;
  /** Background GC of attachments whose pod left the API and whose namespace is gone (upstream #3109). */
  readonly deadPodGc: { readonly enabled: boolean; readonly graceSeconds: number };
  /** The agent's own EC2 rate limit and retries (VPCNET_EC2_QPS, _BURST, _MAX_ATTEMPTS). */
  readonly ec2: { readonly qps: number; readonly burst: number; readonly maxAttempts: number };
  /**
   * The cluster's EC2 throttle Lease and the DaemonSet counting the agents (VPCNET_EC2_FLEET_LEASE,
   * VPCNET_EC2_FLEET_DAEMONSET); undefined when off or without a Kubernetes API.
   */
  readonly ec2Fleet: { readonly lease: LeaseName; readonly daemonSet: LeaseName } | undefined;
  /** Seconds between comparisons of the pool with EC2, and how stale a describe may be. */
  readonly ec2SyncSeconds: number;
  readonly ec2StaleSeconds: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Prometheus metrics on this port of every address (DISABLE_METRICS: undefined). */
  readonly metricsPort: number | undefined;
  /** The read-only introspection endpoint on loopback (DISABLE_INTROSPECTION: undefined). */
  readonly introspection: { readonly host: string; readonly port: number } | undefined;
  /** Taint key removed from the node once the agent serves with addresses in its pool. */
  readonly startupTaint: string;
  /** The subnet census and what the node says of its capacity (settings-capacity.ts). */
  readonly capacity: CapacityConfig;
  /**
   * Adoption of aws-node's pods on a start without a ledger (src/agent/adoption): undefined when
   * VPCNET_ADOPT_AWS_NODE=false.
   */
  readonly adoptAwsNode: { readonly checkpoint: string; readonly vethPrefix: string } | undefined;
}

export interface CapacityConfig {
  /** VPCNET_SUBNET_CENSUS; `off` without a Kubernetes API. */
  readonly census: 'place' | 'observe' | 'off';
  readonly censusLease: { readonly namespace: string; readonly name: string };
  readonly censusPeriodSeconds: number;
  /** VPCNET_NODE_READINESS; `off` without a Kubernetes API. */
  readonly readiness: 'condition' | 'taint' | 'off';
  /** VPCNET_POOL_RETRY_MAX_SECONDS: the pool's longest wait after a failed pass. */
  readonly poolRetryMaxSeconds: number;
}

/** INTROSPECTION_BIND_ADDRESS, already checked to be a loopback HOST:PORT. */
function loopbackHostPort(text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(text.slice(colon + 1));
  if (port > 65535) throw new ConfigError(`INTROSPECTION_BIND_ADDRESS: port ${port} is above 65535`);
  return { host, port };
}

/** What the defaults may ask of the host. */
export interface ConfigHost {
  hostname(): string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The API a pod reaches through the `kubernetes` service, authenticated as its service account. */
export function inClusterApi(host: string, port: number): KubeApiConfig {
  return {
    baseUrl: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt`,
    token: `${SERVICE_ACCOUNT_DIR}/token`,
  };
}

function leaseName(text: string): { namespace: string; name: string } {
  const slash = text.indexOf('/');
  return { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}

function additionalEniTags(text: string): Record<string, string> {
  try {
    return parseAdditionalEniTags(text, VPCNET_OWN_TAG_KEYS);
  } catch (err) {
    throw new ConfigError(`ADDITIONAL_ENI_TAGS: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Parses the agent's environment; throws ConfigError naming the first bad variable. */
export function agentConfigFromEnv(env: Env, host: ConfigHost = { hostname }): AgentConfig {
  const v = readSettings(AGENT_SETTINGS, env);
  // As upstream, an IP target of 0 means unset.
  const targets: WarmPoolTargets = {
    warmEniTarget: v.warmEniTarget,
    cooldownSeconds: v.ipCooldownSeconds,
    ...(v.warmIpTarget === undefined ? {} : { warmIpTarget: v.warmIpTarget }),
    ...(v.minimumIpTarget === undefined ? {} : { minimumIpTarget: v.minimumIpTarget }),
    ...(v.maxEni === undefined ? {} : { maxEni: v.maxEni }),
  };
  if (v.enablePrefixDelegation && v.warmPrefixTarget === 0 && !usesIpTargets(targets)) {
    throw new ConfigError(
      'ENABLE_PREFIX_DELEGATION=true with WARM_PREFIX_TARGET=0 and no WARM_IP_TARGET or MINIMUM_IP_TARGET keeps no address warm; set one of them above 0 (upstream does not support this combination either)',
    );
  }
  if (v.enableIpv6 && !v.enablePrefixDelegation) {
    throw new ConfigError(
      'ENABLE_IPv6=true needs ENABLE_PREFIX_DELEGATION=true: IPv6 pods get addresses out of a /80 prefix on the primary ENI (upstream requires the same)',
    );
  }
  if (v.enableIpv6 && v.enablePodEni) {
    throw new ConfigError(
      'ENABLE_IPv6=true with ENABLE_POD_ENI=true: branch ENIs for IPv6 pods are not built yet (upstream has them); turn one off',
    );
  }
  if (v.enableIpv6 && v.customNetworkCfg) {
    throw new ConfigError(
      "ENABLE_IPv6=true with AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true: IPv6 pods get addresses of the primary ENI's /80 and no secondary ENI is made, so an ENIConfig's subnet would never be used; turn custom networking off",
    );
  }
  const eniTags: EniTagOptions = {
    ...(v.clusterName === undefined ? {} : { clusterName: v.clusterName }),
    ...(v.additionalEniTags === undefined ? {} : { additionalTags: additionalEniTags(v.additionalEniTags) }),
  };
  let kubeApi: KubeApiConfig | undefined;
  if (v.kubeApi !== undefined) kubeApi = { baseUrl: v.kubeApi };
  else if (v.kubernetesServiceHost !== undefined) {
    kubeApi = inClusterApi(v.kubernetesServiceHost, v.kubernetesServicePort);
  }
  if (v.customNetworkCfg && kubeApi === undefined) {
    throw new ConfigError(
      "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true needs the Kubernetes API (the node's ENIConfig is read there): set VPCNET_KUBE_API or run in-cluster",
    );
  }
  const { cloudAccess, eniManagement } = cloudAccessOf(v);
  const eniPlacement: AgentConfig['eniPlacement'] = v.customNetworkCfg
    ? { mode: 'custom', labelKey: v.eniConfigLabelDef, annotationKey: v.eniConfigAnnotationDef }
    : { mode: v.enableSubnetDiscovery ? 'discovery' : 'primary' };
  return {
    agentSocket: v.agentSocket,
    stateDir: v.stateDir,
    delSpoolDir: v.delSpoolDir,
    nodeName: v.nodeName ?? v.myNodeName ?? host.hostname(),
    kubeApi,
    vethPrefix: v.vethPrefix,
    podNetwork: podNetworkConfig(v, { ipv6: v.enableIpv6, kubeApi: kubeApi !== undefined }),
    trunkDriver: v.trunkDriver,
    enablePodEni: v.enablePodEni,
    podSecurityGroupEnforcingMode: v.podSecurityGroupEnforcingMode,
    externalSnat: v.externalSnat,
    nodePort: { enabled: v.nodePortSupport, mark: v.connmark },
    snat: {
      excludeCidrs:
        v.excludeSnatCidrs === undefined
          ? []
          : parseCidrList('AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS', v.excludeSnatCidrs),
      randomize: v.randomizeSnat,
      vpcCidrRefreshSeconds: v.vpcCidrRefreshSeconds,
    },
    targets,
    eniPlacement,
    subnetTagsSeconds: v.subnetTagsSeconds,
    prefixMode: { enabled: v.enablePrefixDelegation, warmPrefixTarget: v.warmPrefixTarget },
    ipv6: { enabled: v.enableIpv6, v4Egress: v.enableV4Egress },
    eniTags,
    minEniLifetimeMs: v.minEniLifetimeSeconds * 1000,
    leakedEniCleanup: {
      // As upstream: ENIs vpcnet may not delete are not swept either.
      enabled: !v.disableLeakedEniCleanup && cloudAccess.provisioning,
      graceMs: v.leakedEniGraceSeconds * 1000,
      intervalMs: v.leakedEniSweepSeconds * 1000,
    },
    cloudAccess,
    eniManagement,
    addWaitSeconds: v.addWaitSeconds,
    reconcileSeconds: v.reconcileSeconds,
    deadPodGc: { enabled: v.deadPodGc, graceSeconds: v.deadPodGcGraceSeconds },
    ec2: { qps: v.ec2Qps, burst: v.ec2Burst, maxAttempts: v.ec2MaxAttempts },
    ec2Fleet:
      kubeApi === undefined || v.ec2FleetLease === 'off'
        ? undefined
        : { lease: leaseName(v.ec2FleetLease), daemonSet: leaseName(v.ec2FleetDaemonSet) },
    ec2SyncSeconds: v.ec2SyncSeconds,
    ec2StaleSeconds: v.ec2StaleSeconds,
    logLevel: v.logLevel,
    metricsPort: v.disableMetrics ? undefined : v.metricsPort,
    introspection: v.disableIntrospection ? undefined : loopbackHostPort(v.introspectionBindAddress),
    startupTaint: v.startupTaint,
    capacity: {
      // Both live in the Kubernetes API: without one there is nothing to elect on or write to. IPv6
      // pods take /80s of the primary ENI (no /28 to count), IMDS-only mode makes no EC2 call.
      census: kubeApi === undefined || cloudAccess.imdsOnly || v.enableIpv6 ? 'off' : v.subnetCensus,
      censusLease: leaseName(v.subnetCensusLease),
      censusPeriodSeconds: v.subnetCensusSeconds,
      readiness: kubeApi === undefined ? 'off' : v.nodeReadiness,
      poolRetryMaxSeconds: v.poolRetryMaxSeconds,
    },
    adoptAwsNode: v.adoptAwsNode
      ? { checkpoint: v.awsNodeCheckpoint, vethPrefix: v.awsNodeVethPrefix }
      : undefined,
  };
}
