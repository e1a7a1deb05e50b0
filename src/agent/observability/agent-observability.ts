// Everything the agent exposes for observation, in one object the agent wires in a few lines:
// the metrics registry and the hooks that feed it, the last EC2 errors, and the two HTTP
// endpoints (Prometheus metrics, read-only introspection), closed with the agent.

import type { AgentConfig } from '../../config/agent-config.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import type { LedgerStore } from '../../ledger/storage/store.ts';
import type { HttpEndpoint } from '../../metrics/http-endpoint.ts';
import { startMetricsServer } from '../../metrics/metrics-server.ts';
import type { AddressSource } from '../address-source.ts';
import { type AgentState, startIntrospectionServer } from '../introspection/introspection-server.ts';
import { AgentMetrics } from './agent-metrics.ts';
import { type CloudErrorEntry, RecentCloudErrors } from './cloud-errors.ts';
import type { Ec2AttemptFeed } from './ec2-attempt-feed.ts';
import { observedAddresses } from './observed-addresses.ts';
import { observedLedgerStore } from './observed-ledger-store.ts';
import { type AgentStateSources, registerStateMetrics } from './state-metrics.ts';

/** The parts of the running agent the scrape-time gauges read. */
export interface AgentParts
  extends Omit<AgentStateSources, 'spoolDir' | 'attachments' | 'reconcileFailures' | 'deadPodCollections'> {
  readonly ledger: Pick<Ledger, 'list'>;
  readonly deadPodGc: { state(): { readonly collected: number } } | undefined;
}

export class AgentObservability {
  readonly metrics = new AgentMetrics();
  readonly #cloudErrors: RecentCloudErrors;
  readonly #unsubscribe: () => void;
  #endpoints: HttpEndpoint[] = [];

  /**
   * `now`: wall clock (ms since epoch), the times of the EC2 errors; `ec2Attempts`: every EC2
   * request LimitedCloud makes (absent: no EC2 figures, e.g. with a fake cloud).
   */
  constructor(now: () => number, ec2Attempts?: Ec2AttemptFeed) {
    this.#cloudErrors = new RecentCloudErrors(now);
    this.#unsubscribe =
      ec2Attempts?.subscribe((attempt) => {
        this.metrics.ec2Attempt(attempt);
        this.#cloudErrors.record(attempt);
      }) ?? (() => {});
  }

  /** The ledger's store with each durable write timed. */
  ledgerStore(inner: LedgerStore): LedgerStore {
    return observedLedgerStore(inner, this.metrics.ledgerCommit);
  }

  /** The pool as ADD sees it: allocations that found no address counted, waits for the pool timed. */
  addresses(inner: AddressSource, allocated?: () => void): AddressSource {
    return observedAddresses(inner, {
      noneFree: this.metrics.noAddressAvailable,
      waited: this.metrics.poolWait,
      ...(allocated === undefined ? {} : { allocated }),
    });
  }

  /** The last EC2 errors, newest first (the state's `cloudErrors`). */
  cloudErrors(): CloudErrorEntry[] {
    return this.#cloudErrors.list();
  }

  /**
   * Registers the gauges read from the agent's state and starts the endpoints the config asks
   * for. Fails, with the setting to change, when an address cannot be used; nothing stays open then.
   */
  async serve(
    config: Pick<AgentConfig, 'metricsPort' | 'introspection' | 'delSpoolDir'>,
    introspect: () => AgentState,
    state: AgentParts,
  ): Promise<{ readonly metrics?: HttpEndpoint; readonly introspection?: HttpEndpoint }> {
    const { ledger, deadPodGc, ...rest } = state;
    registerStateMetrics(this.metrics.registry, {
      ...rest,
      spoolDir: config.delSpoolDir,
      attachments: () => ledger.list().length,
      reconcileFailures: () => this.metrics.reconcileFailures(),
      ...(deadPodGc === undefined ? {} : { deadPodCollections: () => deadPodGc.state().collected }),
    });
    if (config.metricsPort !== undefined) this.metrics.collectProcessMetrics();
    try {
      const metrics =
        config.metricsPort === undefined
          ? undefined
          : await startMetricsServer(config.metricsPort, this.metrics);
      if (metrics) this.#endpoints.push(metrics);
      const introspection =
        config.introspection === undefined
          ? undefined
          : await startIntrospectionServer(config.introspection, introspect);
      if (introspection) this.#endpoints.push(introspection);
      return { ...(metrics ? { metrics } : {}), ...(introspection ? { introspection } : {}) };
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** Closes the endpoints and stops listening to EC2. */
  async close(): Promise<void> {
    this.#unsubscribe();
    const endpoints = this.#endpoints;
    this.#endpoints = [];
    await Promise.all(endpoints.map((e) => e.close()));
  }
}
