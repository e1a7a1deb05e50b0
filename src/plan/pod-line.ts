// One pod, one line (docs/design.md, rule 2): operations for the same pod run one after another,
// operations for different pods run in parallel. The agent's CNI operations and the reconcile
// loop's repairs share one serializer, so a repair never races the pod's own ADD or DEL.
import type { AttachmentKey, PodIdentity } from './attachment.ts';

/** The key a pod's operations queue on: pod UID, else namespace/name, else the container. */
export function podLineKey(pod: PodIdentity, key: AttachmentKey): string {
  if (pod.uid) return `uid:${pod.uid}`;
  if (pod.namespace && pod.name) return `pod:${pod.namespace}/${pod.name}`;
  return `container:${key.containerId}`;
}

export class PodSerializer {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `op` after every earlier operation queued under `podKey` has settled. */
  run<T>(podKey: string, op: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(podKey) ?? Promise.resolve();
    const result = previous.then(op, op);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(podKey, tail);
    // Forget the key once its queue drains, so the map does not grow with every pod ever seen.
    void tail.then(() => {
      if (this.#tails.get(podKey) === tail) this.#tails.delete(podKey);
    });
    return result;
  }

  /** Number of pods with queued or running operations (for introspection). */
  get busyPods(): number {
    return this.#tails.size;
  }
}
