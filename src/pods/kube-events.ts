// Kubernetes Events the agent reports (core v1 `events`, create): on a pod whose stale DEL it
// refused to let tear down the live sandbox's network, and on its node when the startup taint
// went. Best effort and never in a pod operation's way: emit() only queues; one sender posts the
// queue in order; when the API is slow or down the queue stays bounded and what does not fit is
// dropped and counted.
import { randomBytes } from 'node:crypto';
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import type { KubeApiConfig } from './kube-api-config.ts';
import { KubeClient } from './kube-client.ts';

export interface InvolvedObject {
  readonly kind: 'Pod' | 'Node';
  /** A pod's namespace; a node's events go to `default`, as the kubelet's do. */
  readonly namespace?: string;
  readonly name: string;
  readonly uid?: string;
}

export interface AgentEvent {
  readonly involved: InvolvedObject;
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, what `kubectl get events` shows in REASON. */
  readonly reason: string;
  readonly message: string;
}

export interface EventFigures {
  readonly sent: number;
  readonly failed: number;
  readonly dropped: number;
  readonly queued: number;
}

export interface EventRecorder {
  /** Queues the event; never blocks and never throws. */
  emit(event: AgentEvent): void;
  figures(): EventFigures;
  /** Waits for the post under way (the rest is dropped, counted): a stop must not wait on the API. */
  stop(): Promise<void>;
}

/** The `source.component` and `reportingComponent` of the agent's events. */
export const EVENT_COMPONENT = 'vpcnet-agent';

/** The Event object for `e` as reported by the agent on `nodeName` at `now`. */
export function eventObject(e: AgentEvent, nodeName: string, now: Date): Record<string, unknown> {
  const namespace = e.involved.namespace ?? 'default';
  const time = now.toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    // As client-go names them: the object's name and a unique suffix.
    metadata: { name: `${e.involved.name}.${randomBytes(8).toString('hex')}`, namespace },
    involvedObject: {
      apiVersion: 'v1',
      kind: e.involved.kind,
      name: e.involved.name,
      ...(e.involved.kind === 'Pod' ? { namespace } : {}),
      ...(e.involved.uid === undefined ? {} : { uid: e.involved.uid }),
    },
    type: e.type,
    reason: e.reason,
    message: e.message,
    source: { component: EVENT_COMPONENT, host: nodeName },
    reportingComponent: EVENT_COMPONENT,
    reportingInstance: nodeName,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

export interface QueuedEventsDeps {
  /** Creates one event in the API; rejects when it could not. */
  readonly post: (event: AgentEvent) => Promise<void>;
  readonly log: Logger;
  /** Events waiting at most (default 100); more are dropped. */
  readonly capacity?: number;
}

export class QueuedEvents implements EventRecorder {
  readonly #deps: QueuedEventsDeps;
  readonly #capacity: number;
  #queue: AgentEvent[] = [];
  #sending: Promise<void> | undefined;
  #stopped = false;
  #sent = 0;
  #failed = 0;
  #dropped = 0;

  constructor(deps: QueuedEventsDeps) {
    this.#deps = deps;
    this.#capacity = deps.capacity ?? 100;
  }

  emit(event: AgentEvent): void {
    if (this.#stopped || this.#queue.length >= this.#capacity) {
      // Logged once: a slow API would otherwise add a line per pod operation.
      if (this.#dropped++ === 0)
        this.#deps.log.warn('Kubernetes events dropped: queue full', { reason: event.reason });
      return;
    }
    this.#queue.push(event);
    this.#kick();
  }

  #kick(): void {
    if (this.#sending !== undefined) return;
    this.#sending = this.#send().finally(() => {
      this.#sending = undefined;
      // Queued between the sender's last look and here.
      if (this.#queue.length > 0 && !this.#stopped) this.#kick();
    });
  }

  figures(): EventFigures {
    return { sent: this.#sent, failed: this.#failed, dropped: this.#dropped, queued: this.#queue.length };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#dropped += this.#queue.length;
    this.#queue = [];
    await this.#sending;
  }

  async #send(): Promise<void> {
    for (let next = this.#queue.shift(); next !== undefined; next = this.#queue.shift()) {
      try {
        await this.#deps.post(next);
        this.#sent++;
      } catch (err) {
        if (this.#failed++ === 0)
          this.#deps.log.warn('cannot create Kubernetes event', {
            reason: next.reason,
            error: errorText(err),
          });
      }
    }
  }
}

/** The agent's recorder posting to the Kubernetes API (each post bounded by `timeoutMs`). */
export function kubeEvents(
  api: KubeApiConfig,
  nodeName: string,
  log: Logger,
  timeoutMs = 5000,
): EventRecorder {
  const client = new KubeClient(api, { timeoutMs });
  return new QueuedEvents({
    log,
    async post(e) {
      const body = eventObject(e, nodeName, new Date());
      const ns = encodeURIComponent(String((body.metadata as { namespace: string }).namespace));
      await client.request('POST', `/api/v1/namespaces/${ns}/events`, body);
    },
  });
}
