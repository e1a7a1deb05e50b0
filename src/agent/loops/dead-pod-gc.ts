// Background GC of dead pods (upstream #3109: a pod deleted without a DEL keeps its address
// forever). An attachment is collected, exactly as its DEL would collect it, only when both hold:
// its network namespace is gone (path absent, or naming another namespace), and the Kubernetes API
// has said the pod does not exist, continuously for the grace period (first seen absent at T, still
// absent at T+grace, on a monotonic clock). A namespace that still exists keeps its attachment
// whatever the API says; an attachment without a pod identity is left to the runtime's DEL and GC.
import { errorText } from '../../infra/error-text.ts';
import type { KeyedSerializer } from '../../infra/keyed-serializer.ts';
import { PeriodicLoop } from '../../infra/periodic.ts';
import { type Attachment, attachmentKeyString } from '../../plan/attachment.ts';
import { podLineKey } from '../../plan/pod-line.ts';
import type { PodPresence, PodPresenceSource, PodRef } from '../../pods/watch/pod-presence.ts';
import { delRecorded } from '../cni-ops/del.ts';
import { type SandboxNetns, sandboxNetns } from '../cni-ops/sandbox-netns.ts';
import type { OperationContext } from '../context.ts';

export interface DeadPodGcDeps {
  /** What DEL runs with: the collection is a DEL (ledger, kernel, cooldown, branch bindings). */
  readonly ctx: OperationContext;
  readonly serializer: KeyedSerializer;
  readonly pods: PodPresenceSource;
  readonly graceMs: number;
  /** Milliseconds on a clock that never steps back (performance.now in the agent). */
  readonly monotonicNow: () => number;
  readonly netns?: (path: string, recordedId: string | undefined) => Promise<SandboxNetns>;
}

export interface CollectedAttachment {
  readonly key: Attachment['key'];
  readonly pod: PodRef;
  readonly ip: string | undefined;
}

export interface DeadPodGcReport {
  readonly collected: CollectedAttachment[];
  /** Pod and namespace gone, grace not over yet. */
  readonly waiting: number;
  /** Set when the API gave no answer in this pass: nothing was judged absent by it. */
  readonly apiError?: string;
  readonly failures: number;
}

/** The pod an attachment names, when the runtime named one (namespace and name at least). */
function podRefOf(att: Attachment): PodRef | undefined {
  const { namespace, name, uid } = att.pod;
  if (!namespace || !name) return undefined;
  return { namespace, name, ...(uid ? { uid } : {}) };
}

/** One attachment record: a new ADD under the same key starts its own observation. */
function trackingId(att: Attachment): string {
  return `${attachmentKeyString(att.key)}@${att.createdAt}`;
}

/** Passes often enough that a collection comes soon after the grace, and no more than twice a minute. */
export function deadPodGcIntervalMs(graceMs: number): number {
  return Math.min(30_000, Math.max(1000, Math.round(graceMs / 5)));
}

export class DeadPodGc {
  readonly #deps: DeadPodGcDeps;
  /** Tracking id → when the pod was first seen absent (monotonic ms), with its namespace gone. */
  readonly #absentSince = new Map<string, { since: number; key: Attachment['key']; pod: PodRef }>();
  #pass: Promise<unknown> = Promise.resolve();
  #loop: PeriodicLoop | undefined;
  #collected = 0;
  #lastApiError: string | undefined;

  constructor(deps: DeadPodGcDeps) {
    this.#deps = deps;
  }

  /** One pass over the ledger; passes never overlap. Failures are reported, never thrown. */
  runOnce(): Promise<DeadPodGcReport> {
    const pass = this.#pass.then(
      () => this.#runPass(),
      () => this.#runPass(),
    );
    this.#pass = pass.catch(() => undefined);
    return pass;
  }

  start(): void {
    if (this.#loop) return;
    const intervalMs = deadPodGcIntervalMs(this.#deps.graceMs);
    this.#loop = new PeriodicLoop({
      run: () => this.runOnce(),
      intervalMs,
      firstAfterMs: intervalMs,
      unref: true,
    });
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop?.stop();
    await this.#pass;
  }

  /** For introspection: what was collected, and what waits for its grace to end. */
  state() {
    const now = this.#deps.monotonicNow();
    return {
      graceSeconds: this.#deps.graceMs / 1000,
      collected: this.#collected,
      waiting: [...this.#absentSince.values()].map((w) => ({
        key: attachmentKeyString(w.key),
        pod: w.pod,
        absentForMs: Math.round(now - w.since),
      })),
      ...(this.#lastApiError === undefined ? {} : { lastApiError: this.#lastApiError }),
    };
  }

  async #runPass(): Promise<DeadPodGcReport> {
    const { ctx, graceMs, monotonicNow } = this.#deps;
    const collected: CollectedAttachment[] = [];
    let waiting = 0;
    let failures = 0;
    let apiError: string | undefined;
    const answers = new Map<string, PodPresence>();
    const current = new Set<string>();
    for (const att of ctx.ledger.list()) {
      const pod = podRefOf(att);
      // An ADD still at work, or a sandbox nobody named: never collected here.
      if (att.phase !== undefined || pod === undefined) continue;
      const id = trackingId(att);
      current.add(id);
      if ((await this.#netns(att)) !== 'gone') {
        this.#absentSince.delete(id);
        continue;
      }
      if (apiError !== undefined) continue;
      const podKey = `${pod.namespace}/${pod.name}/${pod.uid ?? ''}`;
      let presence = answers.get(podKey);
      if (presence === undefined) {
        try {
          presence = await this.#deps.pods.presence(pod);
          answers.set(podKey, presence);
        } catch (err) {
          // An unreachable API proves nothing: no absence is judged from it in this pass. An earlier
          // observation of absence stands (a deleted pod's UID never comes back).
          apiError = errorText(err);
          continue;
        }
      }
      if (presence === 'present') {
        this.#absentSince.delete(id);
        continue;
      }
      const now = monotonicNow();
      const seen = this.#absentSince.get(id);
      if (seen === undefined) {
        this.#absentSince.set(id, { since: now, key: att.key, pod });
        ctx.log.info(
          'dead-pod GC: pod gone from the API and its namespace gone; collecting after the grace',
          {
            key: att.key,
            pod,
            netns: att.netns,
            graceMs,
          },
        );
        waiting++;
        continue;
      }
      if (now - seen.since < graceMs) {
        waiting++;
        continue;
      }
      try {
        const done = await this.#collect(att, pod, now - seen.since);
        if (done) collected.push(done);
      } catch (err) {
        failures++;
        ctx.log.error('dead-pod GC: collection failed; the next pass tries again', {
          key: att.key,
          pod,
          error: errorText(err),
        });
      }
    }
    for (const id of this.#absentSince.keys()) if (!current.has(id)) this.#absentSince.delete(id);
    this.#lastApiError = apiError;
    if (apiError !== undefined) {
      ctx.log.warn('dead-pod GC: the Kubernetes API did not answer; nothing judged absent in this pass', {
        error: apiError,
      });
    }
    return { collected, waiting, failures, ...(apiError === undefined ? {} : { apiError }) };
  }

  #netns(att: Attachment): Promise<SandboxNetns> {
    return (this.#deps.netns ?? sandboxNetns)(att.netns, att.netnsId);
  }

  /** The attachment's DEL, in its pod's line, if nothing changed it since it was judged. */
  async #collect(
    att: Attachment,
    pod: PodRef,
    absentForMs: number,
  ): Promise<CollectedAttachment | undefined> {
    const { ctx, serializer } = this.#deps;
    return serializer.run(podLineKey(att.pod, att.key), async () => {
      // One pod, one line: an ADD or DEL of this pod that ran while this waited replaced or removed
      // the record (every ledger change replaces the object); that record is not the one judged.
      if (ctx.ledger.get(att.key) !== att) return undefined;
      if ((await this.#netns(att)) !== 'gone') return undefined;
      const ip = ctx.ledger.addressOf(att)?.ip;
      await delRecorded(ctx, att);
      this.#absentSince.delete(trackingId(att));
      this.#collected++;
      ctx.log.info('dead-pod GC: collected the attachment of a pod gone from the API', {
        key: att.key,
        pod,
        ip,
        netns: att.netns,
        absentForMs: Math.round(absentForMs),
      });
      return { key: att.key, pod, ip };
    });
  }
}

/** The collector the agent runs, or undefined (and why, logged) when it is off or has no API to ask. */
export function agentDeadPodGc(
  setting: { readonly enabled: boolean; readonly graceSeconds: number },
  pods: PodPresenceSource | undefined,
  deps: Omit<DeadPodGcDeps, 'pods' | 'graceMs'>,
): DeadPodGc | undefined {
  if (!setting.enabled || pods === undefined) {
    const reason = setting.enabled
      ? 'no Kubernetes API to ask whether pods exist'
      : 'VPCNET_DEAD_POD_GC=false';
    deps.ctx.log.info('dead-pod GC off', { reason });
    return undefined;
  }
  return new DeadPodGc({ ...deps, pods, graceMs: setting.graceSeconds * 1000 });
}
