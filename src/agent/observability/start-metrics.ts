// What the agent is doing, as upstream's series say it: which build runs (awscni_build_info), how
// long its start took (from the process's start to serving CNI requests, and the node's
// initialisation within it), and which background actions are under way right now
// (awscni_ipamd_action_inprogress). Upstream's names, types and label names; docs/metrics.md says
// which parts of vpcnet's start each duration covers.
import { Gauge, Histogram, type Registry } from 'prom-client';
import { VPCNET_VERSION } from '../../infra/version.ts';

export class StartMetrics {
  readonly #startup: Histogram<'success' | 'with_api_server' | 'failure_reason'>;
  readonly #nodeInit: Histogram<'success'>;
  readonly #actions: Gauge<'fn'>;
  readonly #clock: () => number;

  /**
   * `clock`: ms since the process started (performance.now's origin, the default); the agent's
   * start is measured from there, as upstream measures it from its process's start.
   */
  constructor(registry: Registry, clock: () => number = () => performance.now()) {
    this.#clock = clock;
    const registers = [registry];
    // Upstream's label names: `goversion` carries the runtime's version, here Node.js's.
    new Gauge<'version' | 'goversion'>({
      name: 'awscni_build_info',
      help: "A metric with a constant '1' value labeled by the version of vpcnet and of the runtime it runs on",
      labelNames: ['version', 'goversion'],
      registers,
    }).set({ version: VPCNET_VERSION, goversion: process.version }, 1);
    // prom-client's default buckets are Prometheus' (5 ms to 10 s), as upstream's histograms use.
    this.#startup = new Histogram({
      name: 'awscni_ipamd_startup_duration_seconds',
      help: 'The duration of the agent start, from process start to ready to serve CNI requests',
      labelNames: ['success', 'with_api_server', 'failure_reason'],
      registers,
    });
    this.#nodeInit = new Histogram({
      name: 'awscni_ipamd_node_initialization_duration_seconds',
      help: 'The duration of node initialization during the agent start (ledger, cloud, recovery)',
      labelNames: ['success'],
      registers,
    });
    this.#actions = new Gauge({
      name: 'awscni_ipamd_action_inprogress',
      help: 'The number of agent actions in progress, by action',
      labelNames: ['fn'],
      registers,
    });
  }

  /** An action began; the returned function ends it (a second call does nothing). */
  action(fn: string): () => void {
    this.#actions.inc({ fn });
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#actions.dec({ fn });
    };
  }

  /**
   * Runs the node's initialisation (`work`), timed, and counted as the action `nodeInit` while it
   * runs; `withApiServer`: the agent has a Kubernetes API to talk to. A failure is observed too (and the failed start), then thrown on: the agent exits, so it
   * is never scraped (nor is upstream's: its endpoint too opens only after).
   */
  async nodeInitialization<T>(withApiServer: boolean, work: () => Promise<T>): Promise<T> {
    const started = this.#clock();
    const ended = this.action('nodeInit');
    try {
      const done = await work();
      this.#nodeInit.observe({ success: 'true' }, (this.#clock() - started) / 1000);
      return done;
    } catch (err) {
      const now = this.#clock();
      this.#nodeInit.observe({ success: 'false' }, (now - started) / 1000);
      this.#startup.observe(
        { success: 'false', with_api_server: String(withApiServer), failure_reason: 'node_initialization' },
        now / 1000,
      );
      throw err;
    } finally {
      ended();
    }
  }

  /** The agent serves CNI requests now. */
  served(withApiServer: boolean): void {
    this.#startup.observe(
      { success: 'true', with_api_server: String(withApiServer), failure_reason: '' },
      this.#clock() / 1000,
    );
  }
}
