// Messages between the fleet's scheduler (fleet.ts, with the emulator) and its worker processes
// (worker.ts), each hosting many nodes: the scheduler starts and stops nodes and places and
// deletes pods; workers answer with what happened and, at the end, what their nodes hold.

/** The cluster's throttle Lease and the DaemonSet counting its agents (fleet.ts creates it). */
export const FLEET_OBJECTS = {
  lease: { namespace: 'kube-system', name: 'vpcnet-ec2-throttle' },
  daemonSet: { namespace: 'kube-system', name: 'vpcnet' },
} as const;

export type FleetMode = 'vpcnet' | 'upstream';

export interface NodeSpec {
  readonly index: number;
  readonly name: string;
  readonly instanceId: string;
  /** The loopback address the node's IMDS requests come from (the emulator knows the instance by it). */
  readonly imdsSource: string;
}

export interface WorkerConfig {
  readonly mode: FleetMode;
  readonly emulatorUrl: string;
  readonly region: string;
  /** Where the nodes' state directories go. */
  readonly root: string;
  /** Agent environment on top of the fleet's own (e.g. WARM_IP_TARGET=5). */
  readonly agentEnv: Readonly<Record<string, string>>;
  readonly seed: number;
  /** vpcnet mode: the agents share the cluster's EC2 throttle Lease on the emulator's Kubernetes API. */
  readonly fleetLease: boolean;
}

export type ToWorker =
  | { readonly type: 'config'; readonly config: WorkerConfig }
  | { readonly type: 'start'; readonly node: NodeSpec }
  | { readonly type: 'add'; readonly node: number; readonly pod: string }
  | { readonly type: 'del'; readonly node: number; readonly pod: string }
  | { readonly type: 'stop'; readonly node: number }
  | { readonly type: 'report' }
  | { readonly type: 'exit' };

/** What one node holds at the end, as its agent sees it. */
export interface NodeReport {
  readonly index: number;
  readonly instanceId: string;
  /** ENIs in the pool, with their addresses. */
  readonly enis: Readonly<Record<string, readonly string[]>>;
  /** ENIs the ledger records as being created or freed. */
  readonly pendingEnis: readonly string[];
  readonly assigned: number;
  readonly growthBlocked: string | null;
  readonly warnings: number;
  readonly errors: number;
  readonly lastError?: string;
}

export type FromWorker =
  | { readonly type: 'ready' }
  | {
      readonly type: 'started';
      readonly node: number;
      readonly ms: number;
      /** Times its agent exited at start and was started again (CrashLoopBackOff). */
      readonly restarts: number;
    }
  | { readonly type: 'startFailed'; readonly node: number; readonly error: string }
  | {
      readonly type: 'podStarted';
      readonly pod: string;
      readonly ms: number;
      readonly failedAttempts: number;
    }
  | {
      readonly type: 'podGaveUp';
      readonly pod: string;
      readonly failedAttempts: number;
      readonly error: string;
    }
  | { readonly type: 'podDeleted'; readonly pod: string; readonly ok: boolean; readonly error?: string }
  | { readonly type: 'stopped'; readonly node: number }
  | {
      readonly type: 'report';
      readonly nodes: readonly NodeReport[];
      /** Per second (of Date.now): how many of the worker's nodes made a retry in it. */
      readonly retryingNodes: Readonly<Record<string, number>>;
      /** Failed ADD messages, by text, with how often (for the operator). */
      readonly addErrors: Readonly<Record<string, number>>;
    };
