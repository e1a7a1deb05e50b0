// Contract of the emulator, shared by its users (cloud driver tests, the lab).
// The emulator speaks the real wire protocols: EC2 Query API (form POST, XML replies),
// IMDSv2 (token PUT, meta-data paths) and the slice of the Kubernetes API the agent uses.
// It also has an admin API (JSON) that plays the parts of AWS the agent never calls
// (launching instances, fault injection) and the resource controller.

import type { SecondCounts } from './ec2/call-rates.ts';
import type { RequestThrottling } from './ec2/request-throttling.ts';
import type { ContainerRuntime } from './kube/pod-exec.ts';

/** A VPC's fixed shape. Addresses are IPv4 dotted quads, CIDRs a.b.c.d/n. */
export interface VpcSpec {
  readonly vpcId: string;
  readonly cidr: string; // e.g. 10.0.0.0/16
  /** The VPC's IPv6 CIDR block (a /56), when the VPC is dual-stack. */
  readonly ipv6Cidr?: string;
  readonly region: string; // e.g. us-west-2
  readonly subnets: readonly SubnetSpec[];
  /** Security groups of the VPC besides its default one (DescribeSecurityGroups lists them). */
  readonly securityGroups?: readonly { readonly groupId: string; readonly groupName: string }[];
}

export interface SubnetSpec {
  readonly subnetId: string;
  readonly cidr: string; // e.g. 10.0.0.0/20; gateway = first address + 1 (AWS reserves .0-.3 and the last)
  readonly availabilityZone: string;
  /** The subnet's IPv6 CIDR block (a /64 inside the VPC's /56), when the subnet is dual-stack. */
  readonly ipv6Cidr?: string;
  /** The subnet's tags, e.g. `kubernetes.io/role/cni: "1"` for subnet discovery. */
  readonly tags?: Readonly<Record<string, string>>;
  /** Other tenants and CIDR reservations the subnet starts with, from a seed (vpc/tenants.ts). */
  readonly preFragmentation?: PreFragmentation;
}

/**
 * A subnet as long-lived ones are: other tenants' ENIs (each a primary IP, `addressesPerEni`
 * secondary IPs and `prefixesPerEni` /28s, placed by EC2's rules from `seed`) and CIDR
 * reservations. The subnet then picks addresses assigned by count at random, as EC2 does.
 */
export interface PreFragmentation {
  readonly seed: number;
  readonly tenantEnis?: number;
  readonly addressesPerEni?: number;
  readonly prefixesPerEni?: number;
  readonly reservations?: readonly {
    readonly cidr: string;
    readonly type: 'prefix' | 'explicit';
    readonly description?: string;
  }[];
}

/** Faults apply to EC2 actions (and IMDS when `imds` is true; IMDS lag: `imdsStaleReadMs`). */
export interface FaultSettings {
  /** Fraction [0,1] of matching calls answered 503 RequestLimitExceeded. */
  readonly throttleRate?: number;
  /** Fraction [0,1] of matching calls answered 500 InternalError. */
  readonly errorRate?: number;
  /** Added latency per matching call, ms. */
  readonly latencyMs?: number;
  /**
   * EC2's own eventual consistency: matching Describe* calls see the VPC as it was this many ms
   * ago (never earlier than when the setting was made). Mutating calls see the truth. With
   * `imds` and no `imdsStaleReadMs`, IMDS lags by the same amount (the original, joint fault).
   */
  readonly staleReadMs?: number;
  /**
   * IMDS lagging EC2: metadata reads see the VPC as it was this many ms ago, whatever `imds`
   * and `staleReadMs` say (0: IMDS shows the truth while Describe* lags). With it, a test can
   * have IMDS show an address EC2 no longer has, or EC2 one that IMDS does not show yet.
   */
  readonly imdsStaleReadMs?: number;
  /**
   * Fraction [0,1] of matching calls that run but whose answer is lost: the caller gets a 500
   * InternalError although the change happened (a reply that never arrived).
   */
  readonly replyLostRate?: number;
  /**
   * Short pages: matching Describe* replies that page hold at most this many items, with a NextToken
   * for the rest, whatever MaxResults asks (EC2 may answer a page with fewer items than asked for).
   * A client that stops before the last NextToken misses what follows.
   */
  readonly pageItems?: number;
  /** Limit to these EC2 actions (e.g. ["AssignPrivateIpAddresses"]); all when absent. */
  readonly actions?: readonly string[];
  readonly imds?: boolean;
}

export interface LaunchInstanceRequest {
  readonly instanceType: string; // must be a known type (t3.medium, m5.large, m5.4xlarge, ...)
  readonly subnetId: string;
  readonly securityGroupIds?: readonly string[];
  /** Lab only: name of the node's network namespace, where the fabric puts the ENI links. */
  readonly netns?: string;
  /** Kubernetes node name; the kube slice serves GET /api/v1/nodes/{nodeName} for it. */
  readonly nodeName?: string;
  /**
   * The primary ENI's connection-tracking timeouts in seconds, as a launch template sets them
   * (`{ tcpEstablishedTimeout?, udpStreamTimeout?, udpTimeout? }`, EC2's bounds checked).
   */
  readonly connectionTracking?: {
    readonly tcpEstablishedTimeout?: number;
    readonly udpStreamTimeout?: number;
    readonly udpTimeout?: number;
  };
  /**
   * In-process fleets only: a loopback address (127.x.y.z) the node's agent sends its IMDS
   * requests from, so that IMDS answers for this instance although no ENI address is local.
   */
  readonly imdsSourceAddress?: string;
}

export interface LaunchedInstance {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly primaryEni: { readonly eniId: string; readonly mac: string; readonly primaryIp: string };
  readonly subnet: { readonly subnetId: string; readonly cidr: string; readonly gateway: string };
}

/** What the fabric is told; the emulator calls it after its own state changed. */
export interface FabricEni {
  readonly eniId: string;
  readonly mac: string;
  readonly primaryIp: string;
  readonly subnetCidr: string;
  readonly gateway: string;
  /** The subnet's IPv6 /64, when it is dual-stack (the router is its ::1). */
  readonly subnetIpv6Cidr?: string;
  /** The ENI's first IPv6 address, when it has one (device 0 gets it on its link). */
  readonly primaryIpv6?: string | undefined;
}

/**
 * Turns ENI state into kernel state (lab only; the emulator runs without one in unit tests).
 * Node side: a link named eth<deviceIndex> carrying the ENI's MAC in the instance's netns
 * (device 0 also gets its address and default route, as the instance's OS would by DHCP).
 * VPC side: every address assigned to an ENI is routed to that ENI's link.
 */
export interface Fabric {
  eniAttached(netns: string, deviceIndex: number, eni: FabricEni): Promise<void>;
  eniDetached(netns: string, deviceIndex: number, eni: FabricEni): Promise<void>;
  addressesAssigned(eni: FabricEni, ips: readonly string[]): Promise<void>;
  addressesUnassigned(eni: FabricEni, ips: readonly string[]): Promise<void>;
  /** IPv6 (optional): routes for the ENI's IPv6 addresses (/128) and delegated /80s towards its link. */
  ipv6RoutesAdded?(eni: FabricEni, cidrs: readonly string[]): Promise<void>;
  ipv6RoutesRemoved?(eni: FabricEni, cidrs: readonly string[]): Promise<void>;
  /**
   * Pod ENIs (optional): the branch ENI is now reached through VLAN `vlanId` on the trunk ENI's
   * link; the VPC side routes the branch's addresses to the trunk link with that tag. Called only
   * when the trunk is attached to an instance that has a netns.
   */
  branchAssociated?(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void>;
  branchDisassociated?(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void>;
  /**
   * "Which ENI carried a packet" (optional): per ENI ID, the packets the VPC received from it
   * (node → VPC). A trunk's count leaves out the frames of its branches.
   */
  receivedPackets?(
    enis: readonly FabricEni[],
    branches: readonly BranchOnTrunk[],
  ): Promise<ReadonlyMap<string, number>>;
}

/** A branch ENI associated with a trunk ENI under a VLAN ID. */
export interface BranchOnTrunk {
  readonly trunk: FabricEni;
  readonly vlanId: number;
  readonly branch: FabricEni;
}

export interface EmulatorOptions {
  readonly vpc: VpcSpec;
  /** TCP listeners (EC2, IMDS and kube API are all served on each; routed by path). */
  readonly listen: readonly { readonly host: string; readonly port: number }[];
  /** Unix socket for the admin API (and everything else); created 0600. */
  readonly adminSocket?: string;
  readonly fabric?: Fabric;
  /**
   * IMDS identifies the calling instance by the request's source address (any address of
   * one of its ENIs). For loopback tests, the instance to answer for when the source is unknown.
   */
  readonly imdsFallbackInstance?: () => string | undefined;
  /** Log sink for structured lines. */
  readonly log?: (line: Record<string, unknown>) => void;
  /** Random source in [0,1) for IDs, MACs and fault decisions; Math.random when absent. Seed it in tests. */
  readonly random?: () => number;
  /**
   * The clock (ms) of what the emulator keeps over time: the stale-read history and IMDS token
   * expiry; Date.now when absent. A test passes its own and advances it instead of sleeping.
   */
  readonly nowMs?: () => number;
  /**
   * EC2's request rate limits of the account (request-throttling.ts): absent, EC2's published
   * buckets; a partial object changes some of them (e.g. `{ scale: 0.5 }`); `{ enabled: false }`
   * lets every request through.
   */
  readonly throttling?: Readonly<Record<string, unknown>>;
  /**
   * What pods/{name}/exec runs (kube/pod-exec.ts): the lab maps its DaemonSet pods to their
   * nodes. Absent: the API runs no containers and refuses every exec.
   */
  readonly containerRuntime?: ContainerRuntime;
}

export interface RunningEmulator {
  /** Base URLs per TCP listener, e.g. http://127.0.0.1:43121 */
  readonly urls: readonly string[];
  launchInstance(req: LaunchInstanceRequest): Promise<LaunchedInstance>;
  terminateInstance(instanceId: string): Promise<void>;
  setFaults(f: FaultSettings): void;
  /** Changes EC2's request rate limits (the same object PUT /admin/throttling takes). */
  setThrottling(change: Readonly<Record<string, unknown>>): void;
  /** Every bucket used so far, its limit and the tokens it holds now. */
  throttling(): ReturnType<RequestThrottling['state']>;
  /** EC2 calls and RequestLimitExceeded answers per second, since `sinceSecond` of the emulator's clock. */
  ec2Rates(sinceSecond?: number): SecondCounts[];
  close(): Promise<void>;
}

// Admin API over HTTP (JSON bodies), on every listener and the admin socket:
//   POST   /admin/instances            LaunchInstanceRequest -> LaunchedInstance
//   DELETE /admin/instances/{id}       -> 204
//   POST   /admin/instances/{id}/enis  {secondaryIpCount?, ipv4PrefixCount?, subnetId?, tags?} -> 201
//          {eniId, mac, deviceIndex, primaryIp, secondaryIps, ipv4Prefixes}: an ENI someone else
//          created, attached at the lowest free device index with its addresses (not an EC2 call
//          of the agent's: locked-down VPCs, IMDS-only mode)
//   POST   /admin/enis/{id}/addresses  {secondaryIpCount} -> 200 the ENI as above, with more addresses;
//   DELETE /admin/enis/{id}/addresses  {ips} -> 200 the ENI without those secondary IPs
//   PUT    /admin/faults               FaultSettings -> 204
//   PUT    /admin/throttling           a partial ThrottlingSettings (ec2/request-throttling.ts), e.g.
//                                      {"scale": 0.5} to halve EC2's limits -> 200 the settings now
//   GET    /admin/throttling           -> {settings, buckets: {name: {capacity, refillPerSecond, tokens}}}
//   GET    /admin/ec2-rates            -> {seconds: [{second, calls, throttled, byAction}]}: EC2 calls
//                                          and RequestLimitExceeded answers per second, the last hour
//   GET    /admin/traffic              -> {enis: [{eniId, interfaceType, instanceId, trunkEniId, vlanId,
//                                          receivedPackets}]}: per ENI with a fabric link (branches
//                                          included), packets the VPC received from it; 409 without a fabric
//   GET    /admin/state                -> JSON dump of instances, ENIs (branches with their
//                                          trunkAssociation), addresses, and ec2Calls: per EC2 action
//                                          {calls, errors} answered since the emulator started
//   POST   /admin/subnets/{id}/fragmentation  -> {taken, available}: a tenant ENI takes one free
//          address in every /28 block, so the subnet keeps free addresses but can delegate no prefix
//          (InsufficientCidrBlocks); DELETE deletes it -> {available}. Other tenants, CIDR reservations,
//          a seeded pre-fragmentation and the subnet's ground truth: admin-tenants.ts.
//   POST   /admin/pod-eni              {namespace, name, securityGroupIds} -> 201 the pod-eni entry
//          (the resource controller: a branch ENI on the lowest free VLAN of the pod's node's trunk,
//          and the pod's vpc.amazonaws.com/pod-eni annotation); 404 no such pod, 409 not possible
//          (pod unbound, node without trunk, trunk full) with the reason.
// The resource controller also attaches a trunk ENI to a node's instance when the node is labelled
// vpc.amazonaws.com/has-trunk-attached=false, and deletes a pod's branch ENIs when the pod is.
// Kubernetes slice (JSON, core/v1 Pod objects):
//   POST   /api/v1/namespaces/{ns}/pods            create (metadata.uid assigned when absent)
//   GET    /api/v1/namespaces/{ns}/pods/{name}     404 Status when unknown
//   DELETE /api/v1/namespaces/{ns}/pods/{name}
//   PATCH  /api/v1/namespaces/{ns}/pods/{name}     merge, strategic-merge or JSON patch
//   GET    /api/v1/pods?fieldSelector=spec.nodeName%3D{node}   list; with watch=true[&resourceVersion=N]
//          [&allowWatchBookmarks=true][&timeoutSeconds=S] a watch (410 Expired past the event log)
//   GET    /api/v1/nodes[/{name}]                  one Node per launched instance with a node name
//   PATCH  /api/v1/nodes/{name}                    as for pods (labels, annotations)
//   GET    /api/v1/nodes?watch=true&...            as for pods
//   GET    /api/v1/namespaces/{ns}/pods/{name}/exec?command=...&container=...&stdout=true
//          upgraded to a WebSocket (v5.channel.k8s.io, v4.channel.k8s.io), as kubectl exec asks;
//          the command runs as the containerRuntime option says (404 no such pod, 400 refused)
//   GET    /version, /api, /api/v1, /apis          discovery (the core group), what kubectl reads first
