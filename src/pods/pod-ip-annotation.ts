// ANNOTATE_POD_IP (upstream's name and meaning): after a pod's ADD its annotation
// `vpc.amazonaws.com/pod-ips` names its address, so that a policy engine (Calico) can program the
// pod's policy before the kubelet reports status.podIP; after its DEL the annotation is emptied
// (upstream writes "" and keeps the key) if it still names the address released.
//
// Upstream writes it inside the ADD and only logs a failure. Here an ADD only queues the write and
// answers: a slow or unreachable API never delays a pod's network, nor fails it. The writes keep
// their order per pod (an ADD's before its DEL's, a later ADD's after both); different pods are
// written a few at a time; a queue that is full drops the write, counted and logged once.
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiStatus, KubeClient, MERGE_PATCH } from './kube-client.ts';

export const POD_IPS_ANNOTATION = 'vpc.amazonaws.com/pod-ips';
const JSON_PATCH = 'application/json-patch+json';

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
}

/** `set`: the annotation names `ip`; `clear`: emptied if it names `ip`, else left alone. */
export interface PodIpWrite {
  readonly kind: 'set' | 'clear';
  readonly pod: PodRef;
  readonly ip: string;
}

export interface PodIpAnnotationFigures {
  readonly written: number;
  readonly failed: number;
  readonly dropped: number;
  readonly queued: number;
}

export interface PodIpAnnotator {
  /** Queues `set`; never waits and never throws. */
  added(pod: PodRef, ip: string): void;
  /** Queues `clear`; never waits and never throws. */
  released(pod: PodRef, ip: string): void;
  figures(): PodIpAnnotationFigures;
  /** Resolves once nothing is queued or being written. */
  idle(): Promise<void>;
  /** Drops what is queued (counted); writes under way end on their own: a stop never waits on the API. */
  stop(): Promise<void>;
}

export interface QueuedPodIpAnnotationsDeps {
  /** One write in the API; rejects when it could not be made. */
  readonly write: (w: PodIpWrite) => Promise<void>;
  readonly log: Pick<Logger, 'warn'>;
  /** Writes waiting at most (default 1000, a node's pods several times over). */
  readonly capacity?: number;
  /** Pods written at once (default 4). */
  readonly parallel?: number;
}

function podKey(p: PodRef): string {
  return `${p.namespace}/${p.name}`;
}

export class QueuedPodIpAnnotations implements PodIpAnnotator {
  readonly #d: QueuedPodIpAnnotationsDeps;
  readonly #capacity: number;
  readonly #parallel: number;
  #queue: PodIpWrite[] = [];
  /** Pods with a write under way: their next write waits for it. */
  readonly #busy = new Set<string>();
  #running = new Set<Promise<void>>();
  #idle: (() => void)[] = [];
  #stopped = false;
  #written = 0;
  #failed = 0;
  #dropped = 0;

  constructor(deps: QueuedPodIpAnnotationsDeps) {
    this.#d = deps;
    this.#capacity = deps.capacity ?? 1000;
    this.#parallel = deps.parallel ?? 4;
  }

  added(pod: PodRef, ip: string): void {
    this.#enqueue({ kind: 'set', pod, ip });
  }

  released(pod: PodRef, ip: string): void {
    this.#enqueue({ kind: 'clear', pod, ip });
  }

  figures(): PodIpAnnotationFigures {
    return {
      written: this.#written,
      failed: this.#failed,
      dropped: this.#dropped,
      queued: this.#queue.length,
    };
  }

  idle(): Promise<void> {
    if (this.#queue.length === 0 && this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#dropped += this.#queue.length;
    this.#queue = [];
  }

  #enqueue(w: PodIpWrite): void {
    if (this.#stopped || this.#queue.length >= this.#capacity) {
      // Logged once: a slow API would otherwise add a line per pod operation.
      if (this.#dropped++ === 0)
        this.#d.log.warn(`pod annotation ${POD_IPS_ANNOTATION} not written: queue full`, {
          pod: podKey(w.pod),
        });
      return;
    }
    this.#queue.push(w);
    this.#pump();
  }

  /** Starts the oldest writes of pods that have none under way, up to the parallel bound. */
  #pump(): void {
    for (let i = 0; i < this.#queue.length && this.#running.size < this.#parallel; ) {
      const w = this.#queue[i] as PodIpWrite;
      const key = podKey(w.pod);
      if (this.#busy.has(key)) {
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      this.#busy.add(key);
      const run: Promise<void> = this.#run(w).finally(() => {
        this.#busy.delete(key);
        this.#running.delete(run);
        if (!this.#stopped) this.#pump();
        if (this.#queue.length === 0 && this.#running.size === 0) {
          for (const resolve of this.#idle.splice(0)) resolve();
        }
      });
      this.#running.add(run);
    }
  }

  async #run(w: PodIpWrite): Promise<void> {
    try {
      await this.#d.write(w);
      this.#written++;
    } catch (err) {
      // Logged once: an API without pods `patch` (RBAC) fails every write the same way.
      if (this.#failed++ === 0)
        this.#d.log.warn(
          `cannot write pod annotation ${POD_IPS_ANNOTATION} (best effort; the pod's network is unaffected)`,
          {
            pod: podKey(w.pod),
            error: errorText(err),
          },
        );
    }
  }
}

/** A JSON Pointer to the annotation (RFC 6901: `/` in a key is written `~1`). */
const ANNOTATION_POINTER = `/metadata/annotations/${POD_IPS_ANNOTATION.replaceAll('~', '~0').replaceAll('/', '~1')}`;

/**
 * The writes as API calls. `set` is one merge patch (a value already there changes nothing).
 * `clear` is one JSON patch that tests the value before it empties it, so the server does the
 * comparison: an address a later ADD wrote meanwhile stays. A pod that is gone, or whose annotation
 * names something else (the test fails: 422), has nothing to clear.
 */
export function kubePodIpWriter(api: KubeApiConfig, timeoutMs = 5000): (w: PodIpWrite) => Promise<void> {
  const client = new KubeClient(api, { timeoutMs });
  return async (w) => {
    const path = `/api/v1/namespaces/${encodeURIComponent(w.pod.namespace)}/pods/${encodeURIComponent(w.pod.name)}`;
    if (w.kind === 'set') {
      await client.request(
        'PATCH',
        path,
        { metadata: { annotations: { [POD_IPS_ANNOTATION]: w.ip } } },
        MERGE_PATCH,
      );
      return;
    }
    const patch = [
      { op: 'test', path: ANNOTATION_POINTER, value: w.ip },
      { op: 'replace', path: ANNOTATION_POINTER, value: '' },
    ];
    try {
      await client.request('PATCH', path, patch, JSON_PATCH);
    } catch (err) {
      const status = apiStatus(err);
      if (status === 404 || status === 422) return;
      throw err;
    }
  };
}

/** The agent's annotator writing to the Kubernetes API. */
export function kubePodIpAnnotations(api: KubeApiConfig, log: Logger): PodIpAnnotator {
  return new QueuedPodIpAnnotations({ write: kubePodIpWriter(api), log });
}
