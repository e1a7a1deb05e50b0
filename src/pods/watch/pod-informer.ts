// The pods of this node, kept by list + watch: list (which gives a resourceVersion), watch from it,
// and when the watch ends watch again from the last resourceVersion seen (an event's or a
// bookmark's). An expired resourceVersion (410, as an HTTP status or an ERROR event) means the
// events in between are lost: list again. Errors back off exponentially, with jitter so that the
// agents of a cluster do not return to a restarted API server all at once.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { apiStatus, type KubeClient } from '../kube-client.ts';
import type { PodMetadata } from '../pod-metadata.ts';

export interface PodInformerOptions {
  readonly client: KubeClient;
  readonly nodeName: string;
  readonly log: Logger;
  /** First wait after a failure; it doubles with each failure in a row, up to maxRetryMs. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** Deadline of the list and of the watch's headers. */
  readonly timeoutMs?: number;
  /** How long the server keeps one watch open before the informer opens the next. */
  readonly watchSeconds?: number;
  /** A watch that sent nothing for this long (bookmarks come every minute or so) is reopened. */
  readonly idleMs?: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

const EXPIRED = 410;
/** A watch that ends sooner than this having sent nothing counts as a failure (no busy loop). */
const MIN_USEFUL_WATCH_MS = 1000;

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export class PodInformer {
  readonly #o: PodInformerOptions;
  readonly #stop = new AbortController();
  #pods = new Map<string, PodMetadata>();
  /** Where the next watch starts; undefined: list first. */
  #resourceVersion: string | undefined;
  #watching = false;
  /** The last round failed: say so in the log when a watch is open again. */
  #failing = false;
  #loop: Promise<void> | undefined;
  /** Settles start(): the first watch is open, or the first round failed. */
  #firstRound: (() => void) | undefined;
  /** Lists and watches opened (tests, introspection). */
  readonly counts = { lists: 0, watches: 0 };

  constructor(options: PodInformerOptions) {
    this.#o = options;
  }

  /** The watch is open: the cache is at most one event behind the API. */
  get watching(): boolean {
    return this.#watching;
  }

  get(namespace: string, name: string): PodMetadata | undefined {
    return this.#pods.get(key(namespace, name));
  }

  list(): PodMetadata[] {
    return [...this.#pods.values()];
  }

  /** Starts the loop; resolves once the first watch is open or the first attempt failed. */
  start(): Promise<void> {
    if (this.#loop) return Promise.resolve();
    const first = new Promise<void>((resolve) => {
      this.#firstRound = resolve;
    });
    this.#loop = this.#run();
    return first;
  }

  /** Ends the watch and the loop. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#watching = false;
    this.#settleFirstRound();
    await this.#loop;
  }

  #settleFirstRound(): void {
    this.#firstRound?.();
    this.#firstRound = undefined;
  }

  async #run(): Promise<void> {
    let failures = 0;
    let expiredInARow = 0;
    while (!this.#stop.signal.aborted) {
      let wait = false;
      try {
        const useful = await this.#round();
        failures = useful ? 0 : failures + 1;
        expiredInARow = 0;
        wait = !useful;
      } catch (err) {
        this.#watching = false;
        this.#settleFirstRound();
        if (this.#stop.signal.aborted) break;
        if (apiStatus(err) === EXPIRED) {
          // The events since our version are gone: list again, at once unless that just happened.
          this.#resourceVersion = undefined;
          expiredInARow++;
          wait = expiredInARow > 1;
          this.#o.log.info('pod watch expired; listing the pods of the node again', {
            api: this.#o.client.baseUrl,
            error: errorText(err),
          });
        } else {
          failures++;
          wait = true;
          this.#failing = true;
          this.#o.log.warn('pod watch failed; lookups go to the API until it is back', {
            api: this.#o.client.baseUrl,
            error: errorText(err),
          });
        }
      }
      if (wait && !this.#stop.signal.aborted) await this.#sleep(this.#backoffMs(Math.max(failures, 1)));
    }
    this.#watching = false;
  }

  /** List if needed, then one watch until it ends. Returns whether the watch was of any use. */
  async #round(): Promise<boolean> {
    const { client, nodeName } = this.#o;
    const signal = this.#stop.signal;
    if (this.#resourceVersion === undefined) {
      this.counts.lists++;
      const listed = await client.listPodsOnNode(nodeName, { signal, timeoutMs: this.#o.timeoutMs ?? 5000 });
      this.#pods = new Map(listed.pods.map((p) => [key(p.namespace, p.name), p]));
      this.#resourceVersion = listed.resourceVersion;
    }
    this.counts.watches++;
    const events = await client.watchPodsOnNode(nodeName, this.#resourceVersion, {
      signal,
      timeoutSeconds: this.#o.watchSeconds ?? 300 + Math.floor(this.#random() * 60),
      idleMs: this.#o.idleMs ?? 90_000,
      timeoutMs: this.#o.timeoutMs ?? 5000,
    });
    const now = this.#o.now ?? Date.now;
    const opened = now();
    let seen = 0;
    this.#watching = true;
    this.#settleFirstRound();
    if (this.#failing) {
      this.#failing = false;
      this.#o.log.info('pod watch is open again; lookups use the cache');
    }
    try {
      for await (const e of events) {
        seen++;
        if (e.type === 'ERROR') throw e.error;
        if (e.type !== 'BOOKMARK') {
          const k = key(e.pod.namespace, e.pod.name);
          if (e.type === 'DELETED') this.#pods.delete(k);
          else this.#pods.set(k, e.pod);
        }
        if (e.resourceVersion !== undefined) this.#resourceVersion = e.resourceVersion;
      }
    } finally {
      this.#watching = false;
    }
    return seen > 0 || now() - opened >= MIN_USEFUL_WATCH_MS;
  }

  #random(): number {
    return (this.#o.random ?? Math.random)();
  }

  #backoffMs(failures: number): number {
    const base = this.#o.retryMs ?? 1000;
    const capped = Math.min(base * 2 ** Math.min(failures - 1, 20), this.#o.maxRetryMs ?? 30_000);
    return Math.round(capped * (0.8 + 0.4 * this.#random()));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.#stop.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
