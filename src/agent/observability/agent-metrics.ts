// The agent's Prometheus metrics that events feed: CNI operations, EC2 requests, ledger writes,
// reconcile passes, ADDs that found the pool empty or waited for it to grow, the pool manager's
// actions and left-over ENIs, trunk checks, and the start (start-metrics.ts). One registry per
// agent (never prom-client's global one), so that in-process test agents do not share series.
// Gauges of the agent's state are computed at scrape time instead (state-metrics.ts,
// pool-metrics.ts): nothing on the ADD path updates them.
//
// Every series of upstream's agent under its name (awscni_*), type and label names, fed by what
// means the same here; vpcnet's own under vpcnet_*. docs/metrics.md lists them all.
import { Counter, collectDefaultMetrics, Histogram, Registry, Summary } from 'prom-client';
import { CloudError } from '../../cloud/cloud.ts';
import type { Ec2Attempt } from '../../cloud/limited-cloud.ts';
import type { PoolAction, PoolObserver } from '../../ipam/pool/pool-parts.ts';
import type { SyncPlace } from '../../ledger/storage/sync-thread.ts';
import type { ReconcileReport } from '../../reconcile/reconciler.ts';
import { StartMetrics } from './start-metrics.ts';

/** Seconds: a CNI operation takes milliseconds; an ADD may wait for EC2 up to its deadline. */
const OPERATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds: one ledger write is an fsync or two. */
const LEDGER_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Seconds: an ADD waits for the pool manager, which waits for EC2. */
const WAIT_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const PASS_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Outcome = 'ok' | 'error';

/** The pool's actions under upstream's names for the same work (awscni_ipamd_action_inprogress). */
const UPSTREAM_ACTION: Readonly<Record<PoolAction, string>> = {
  grow: 'increaseDatastorePool',
  shrink: 'decreaseDatastorePool',
  ec2Sync: 'nodeIPPoolReconcile',
};

export class AgentMetrics {
  readonly registry = new Registry();
  /** The build, the start's durations and the actions under way. */
  readonly start: StartMetrics;
  readonly #operations: Histogram<'command' | 'outcome'>;
  readonly #addRequests: Counter;
  readonly #delRequests: Counter<'reason'>;
  readonly #apiLatency: Summary<'api' | 'error' | 'status'>;
  readonly #apiErrors: Counter<'api' | 'error'>;
  readonly #ec2Requests: Counter<'fn'>;
  readonly #ec2Errors: Counter<'fn'>;
  readonly #ledgerCommits: Histogram<'outcome'>;
  readonly #ledgerSyncs: Counter<'place'>;
  readonly #poolWaits: Histogram<'outcome'>;
  readonly #passes: Histogram<'outcome'>;
  readonly #repairs: Counter<'kind'>;
  readonly #collections: Counter<'kind'>;
  readonly #vpcCidrRefreshes: Counter<'result'>;
  readonly #noAddress: Counter;
  readonly #podEniErrors: Counter<'fn'>;
  readonly #awsUtilsErrors: Counter<'fn' | 'error'>;
  #reconcileFailures = 0;

  constructor() {
    const registers = [this.registry];
    this.start = new StartMetrics(this.registry);
    this.#operations = new Histogram({
      name: 'vpcnet_cni_operation_duration_seconds',
      help: 'Time the agent took to serve a CNI request (ADD, DEL, CHECK, GC, STATUS), by outcome',
      labelNames: ['command', 'outcome'],
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.#addRequests = new Counter({
      name: 'awscni_add_ip_req_count',
      help: 'The number of add IP address requests (CNI ADDs)',
      registers,
    });
    this.#delRequests = new Counter({
      name: 'awscni_del_ip_req_count',
      help: 'The number of delete IP address requests (CNI DELs, spooled ones included)',
      labelNames: ['reason'],
      registers,
    });
    this.#apiLatency = new Summary({
      name: 'awscni_aws_api_latency_ms',
      help: 'EC2 request latency in ms, one per attempt (status: "200", else the EC2 error code)',
      labelNames: ['api', 'error', 'status'],
      percentiles: [0.5, 0.9, 0.99],
      maxAgeSeconds: 600,
      ageBuckets: 5,
      registers,
    });
    this.#apiErrors = new Counter({
      name: 'awscni_aws_api_error_count',
      help: 'The number of times an EC2 request was answered with an error, by EC2 error code',
      labelNames: ['api', 'error'],
      registers,
    });
    this.#ec2Requests = new Counter({
      name: 'awscni_ec2api_req_count',
      help: 'The number of requests made to EC2 APIs (every attempt, retries included)',
      labelNames: ['fn'],
      registers,
    });
    this.#ec2Errors = new Counter({
      name: 'awscni_ec2api_error_count',
      help: 'The number of failed EC2 API requests (throttled ones included)',
      labelNames: ['fn'],
      registers,
    });
    this.#ledgerCommits = new Histogram({
      name: 'vpcnet_ledger_commit_duration_seconds',
      help: 'Time of one durable ledger write (a group commit carrying every change made meanwhile)',
      labelNames: ['outcome'],
      buckets: LEDGER_BUCKETS,
      registers,
    });
    this.#ledgerSyncs = new Counter({
      name: 'vpcnet_ledger_syncs_total',
      help: 'fdatasyncs of the ledger journal, by where they ran (loop: on the event loop, the disk answering quickly; pool: through the thread pool, after a slow one)',
      labelNames: ['place'],
      registers,
    });
    this.#poolWaits = new Histogram({
      name: 'vpcnet_pool_growth_wait_seconds',
      help: 'ADDs that found no free address and waited for the pool to grow (outcome woken: addresses arrived, or timeout)',
      labelNames: ['outcome'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.#passes = new Histogram({
      name: 'vpcnet_reconcile_pass_duration_seconds',
      help: 'Reconcile passes (drift repair and collection), by outcome (error: some repair failed)',
      labelNames: ['outcome'],
      buckets: PASS_BUCKETS,
      registers,
    });
    this.#repairs = new Counter({
      name: 'vpcnet_reconcile_repairs_total',
      help: 'Drift the reconcile loop repaired, by resource kind (podNetwork: the pod network was rebuilt)',
      labelNames: ['kind'],
      registers,
    });
    this.#collections = new Counter({
      name: 'vpcnet_reconcile_collections_total',
      help: 'Kernel objects no attachment owned that the reconcile loop removed, by resource kind',
      labelNames: ['kind'],
      registers,
    });
    this.#vpcCidrRefreshes = new Counter({
      name: 'vpcnet_vpc_cidr_refreshes_total',
      help: "Re-reads of the VPC's CIDR blocks from instance metadata, by result (unchanged, changed: SNAT exclusions re-applied, failed)",
      labelNames: ['result'],
      registers,
    });
    this.#noAddress = new Counter({
      name: 'awscni_no_available_ip_addresses',
      help: 'The number of pod IP assignments that found no available IP address (each ADD that asked the pool and found it empty)',
      registers,
    });
    this.#podEniErrors = new Counter({
      name: 'awscni_pod_eni_error_count',
      help: "The number of errors encountered for pod ENIs (finding or setting up the node's trunk ENI)",
      labelNames: ['fn'],
      registers,
    });
    this.#awsUtilsErrors = new Counter({
      name: 'awscni_aws_utils_error_count',
      help: 'The number of EC2 errors no caller saw: a new ENI that could be neither attached nor deleted (retried), by EC2 error code',
      labelNames: ['fn', 'error'],
      registers,
    });
  }

  /** A CNI operation the agent answered (cni-handler.ts's observe). On the ADD path: cheap. */
  readonly operation = (command: string, ok: boolean, ms: number): void => {
    this.#operations.observe({ command, outcome: outcomeOf(ok) }, ms / 1000);
    if (command === 'ADD') this.#addRequests.inc();
    else if (command === 'DEL') this.#delRequests.inc({ reason: 'PodDeleted' });
  };

  /** One EC2 request as LimitedCloud saw it answered. */
  readonly ec2Attempt = (a: Ec2Attempt): void => {
    const code = a.error?.code;
    this.#apiLatency.observe(
      { api: a.action, error: String(code !== undefined), status: code ?? '200' },
      a.ms,
    );
    this.#ec2Requests.inc({ fn: a.action });
    if (code === undefined) return;
    this.#ec2Errors.inc({ fn: a.action });
    this.#apiErrors.inc({ api: a.action, error: code });
  };

  /** One durable write of the ledger (observed-ledger-store.ts). */
  readonly ledgerCommit = (ms: number, ok: boolean): void => {
    this.#ledgerCommits.observe({ outcome: outcomeOf(ok) }, ms / 1000);
  };

  /** One fdatasync of the ledger journal, and where it ran (sync-thread.ts). */
  readonly ledgerSync = (place: SyncPlace): void => {
    this.#ledgerSyncs.inc({ place });
  };

  /** An ADD that waited for the pool manager to bring an address (observed-addresses.ts). */
  readonly poolWait = (ms: number, woken: boolean): void => {
    this.#poolWaits.observe({ outcome: woken ? 'woken' : 'timeout' }, ms / 1000);
  };

  /** A finished reconcile pass (Reconciler's onPass). */
  readonly reconciled = (report: ReconcileReport): void => {
    this.#passes.observe({ outcome: outcomeOf(report.failures.length === 0) }, report.durationMs / 1000);
    for (const [kind, n] of Object.entries(report.byKind.repaired)) this.#repairs.inc({ kind }, n);
    for (const [kind, n] of Object.entries(report.byKind.collected)) this.#collections.inc({ kind }, n);
    this.#reconcileFailures += report.failures.length;
  };

  /** One re-read of the VPC's CIDR blocks (vpc-cidr-refresh.ts). */
  readonly vpcCidrRefreshed = (result: 'unchanged' | 'changed' | 'failed'): void => {
    this.#vpcCidrRefreshes.inc({ result });
  };

  /** An ADD asked the pool for an address and found none free (it then waits for the pool to grow). */
  readonly noAddressAvailable = (): void => {
    this.#noAddress.inc();
  };

  /**
   * A check of the trunk ENI failed: the one before serving is upstream's `nodeInit` (the node's
   * set-up for pods with security groups), later ones are `trunkCheck`.
   */
  readonly trunkCheckFailed = (when: 'start' | 'loop'): void => {
    this.#podEniErrors.inc({ fn: when === 'start' ? 'nodeInit' : 'trunkCheck' });
  };

  /** What the pool manager tells: its actions while they run, and ENIs it could not clean up. */
  poolObserver(): PoolObserver {
    return {
      actionStarted: (action) => this.start.action(UPSTREAM_ACTION[action]),
      // Upstream's fn for the same failure. Its error label is the message; here the EC2 code, so
      // that the series stay few.
      eniLeftOver: (_eniId, err) =>
        this.#awsUtilsErrors.inc({
          fn: 'AllocENIDeleteErr',
          error: err instanceof CloudError ? err.code : err instanceof Error ? err.name : 'Error',
        }),
    };
  }

  /** Repairs and removals of the reconcile loop that failed so far (awscni_ipamd_error_count). */
  reconcileFailures(): number {
    return this.#reconcileFailures;
  }

  /**
   * prom-client's process and Node.js metrics, only when they are served (they watch the event
   * loop). No prefix: process_* are the names Prometheus' own clients use (upstream's Go agent too).
   */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The text exposition format, and its Content-Type. */
  async exposition(): Promise<{ readonly contentType: string; readonly text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}

function outcomeOf(ok: boolean): Outcome {
  return ok ? 'ok' : 'error';
}
