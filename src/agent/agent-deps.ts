// What the node agent is given (AgentDeps: its configuration and every side effect it uses) and
// what startAgent returns (RunningAgent), apart from how it starts (agent.ts).
import type { Cloud } from '../cloud/cloud.ts';
import type { Ec2BudgetView } from '../cloud/limited-cloud.ts';
import type { ForwardedRequest, ForwardedResponse } from '../cni/wire.ts';
import type { AgentConfig } from '../config/agent-config.ts';
import type { Dataplane } from '../dataplane/dataplane.ts';
import type { Logger } from '../infra/log.ts';
import type { NodeEniConfigSource } from '../ipam/enis/eni-placement-custom.ts';
import type { AddressPool } from '../ipam/pool/pool.ts';
import type { WarmPoolTargets } from '../ipam/pool/targets.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { EventRecorder } from '../pods/kube-events.ts';
import type { CniNodes } from '../pods/node/cni-node.ts';
import type { NodeConditions } from '../pods/node/node-conditions.ts';
import type { NodeLabels } from '../pods/node/node-labels.ts';
import type { NodeSchedulability } from '../pods/node/node-schedulable.ts';
import type { NodeTaints } from '../pods/node/node-taints.ts';
import type { PodIpAnnotator } from '../pods/pod-ip-annotation.ts';
import type { PodPresenceSource } from '../pods/watch/pod-presence.ts';
import type { PodSource } from '../pods/watch/pod-source.ts';
import type { introspection } from './introspection/introspection.ts';
import type { DeadPodGc } from './loops/dead-pod-gc.ts';
import type { CensusElection } from './loops/subnet-census.ts';
import type { AgentObservability } from './observability/agent-observability.ts';
import type { Ec2AttemptFeed } from './observability/ec2-attempt-feed.ts';

export interface AgentDeps {
  /** The node's labels in the Kubernetes API (absent without an API). */
  readonly nodeLabels?: NodeLabels;
  /** How often the trunk ENI is looked for and checked (ms, default 5 s). */
  readonly trunkIntervalMs?: number;
  /** The node's CNINode in the Kubernetes API (absent without an API): loops/cni-node.ts keeps it. */
  readonly cniNodes?: CniNodes;
  /** With custom networking: the name of the ENIConfig the node names (for its CNINode). */
  readonly nodeEniConfigName?: () => Promise<string>;
  /** How often the CNINode is checked (ms, default 60 s: one GET per node and minute). */
  readonly cniNodeIntervalMs?: number;
  readonly config: AgentConfig;
  readonly targets: WarmPoolTargets;
  readonly cloud: Cloud;
  readonly dataplane: Dataplane;
  readonly pods: PodSource;
  readonly log: Logger;
  readonly now: () => number;
  /** Replaces the check that CNI_NETNS is a network namespace (tests whose namespaces are files). */
  readonly notANetworkNamespace?: (path: string) => Promise<string | undefined>;
  /** The EC2 client's figures (calls, throttling, retries, waits) for the state view. */
  readonly cloudFigures?: () => unknown;
  /** The EC2 client's budget (LimitedCloud), which the pool sizes its top-ups to and reports. */
  readonly ec2Budget?: Ec2BudgetView;
  /** Pool manager loop period (ms). */
  readonly poolIntervalMs?: number;
  /** Whether pods exist in the Kubernetes API (the dead-pod GC; absent = no API, GC off). */
  readonly podPresence?: PodPresenceSource;
  /** A clock that never steps back (ms; default performance.now): the dead-pod GC's grace. */
  readonly monotonicNow?: () => number;
  /** Every EC2 request the cloud makes (LimitedCloud's observe): metrics and the state's cloudErrors. */
  readonly ec2Attempts?: Ec2AttemptFeed;
  /** The node's taints (startup-taint.ts) and Kubernetes Events; absent without an API. */
  readonly nodeTaints?: NodeTaints;
  readonly events?: EventRecorder;
  /** ANNOTATE_POD_IP: pods' `vpc.amazonaws.com/pod-ips`, written in the background (absent: off). */
  readonly podIpAnnotations?: PodIpAnnotator;
  /** The node's ENIConfig, read from the API (custom networking only). */
  readonly eniConfigs?: NodeEniConfigSource;
  /** Where the runtime binds pods' network namespaces (adoption looks there; default /var/run/netns). */
  readonly runtimeNetnsDir?: string;
  /** Whether the node is cordoned (AWS_MANAGE_ENIS_NON_SCHEDULABLE=false holds the pool then); absent without an API. */
  readonly nodeSchedulability?: NodeSchedulability;
  /**
   * The census Lease's election (VPCNET_SUBNET_CENSUS, loops/subnet-census.ts); absent without an
   * API or with the census off.
   */
  readonly censusElection?: CensusElection;
  /** The node's conditions (VPCNET_NODE_READINESS, loops/node-readiness.ts); absent without an API. */
  readonly nodeConditions?: NodeConditions;
  /** The node as the API answers it (its kubelet maxPods); absent without an API. */
  readonly readNode?: () => Promise<unknown>;
}

export interface RunningAgent {
  readonly ledger: Ledger;
  readonly pool: AddressPool;
  /** The CNI handler the RPC server serves (also for in-process tests). */
  cni(req: ForwardedRequest): Promise<ForwardedResponse>;
  /** The background GC of dead pods, when it runs. */
  readonly deadPodGc: DeadPodGc | undefined;
  /** The agent's state as the introspection endpoint serves it. */
  introspect(): ReturnType<typeof introspection> & Record<string, unknown>;
  /** Where the metrics and introspection endpoints listen, when they do. */
  readonly endpoints: Awaited<ReturnType<AgentObservability['serve']>>;
  stop(): Promise<void>;
}
