// A Kubernetes API for the dead-pod GC's unit tests: a set of pods, which a test adds and deletes,
// and a switch that makes the API unreachable.
import type { PodPresence, PodPresenceSource, PodRef } from '../watch/pod-presence.ts';

export class FakePodPresence implements PodPresenceSource {
  /** `namespace/name` → UID of the pod the API holds under that name. */
  readonly #pods = new Map<string, string>();
  unreachable = false;
  /** Questions asked (the GC asks only about attachments whose namespace is gone). */
  asked = 0;
  /** Runs before each answer: lets a test act while the GC waits for the API. */
  onAsk: ((pod: PodRef) => Promise<void>) | undefined;

  add(namespace: string, name: string, uid: string): void {
    this.#pods.set(`${namespace}/${name}`, uid);
  }

  delete(namespace: string, name: string): void {
    this.#pods.delete(`${namespace}/${name}`);
  }

  async presence(pod: PodRef): Promise<PodPresence> {
    this.asked++;
    await this.onAsk?.(pod);
    if (this.unreachable) throw new Error('fake Kubernetes API: connection refused');
    const uid = this.#pods.get(`${pod.namespace}/${pod.name}`);
    if (uid === undefined) return 'absent';
    return pod.uid === undefined || pod.uid === uid ? 'present' : 'absent';
  }
}
