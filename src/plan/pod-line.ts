// One pod, one line (docs/design.md, rule 2): the key a pod's operations queue on, in the
// agent's one KeyedSerializer (src/infra/keyed-serializer.ts), which the CNI operations and the
// reconcile loop's repairs share, so a repair never races the pod's own ADD or DEL.
import type { AttachmentKey, PodIdentity } from './attachment.ts';

/** The key a pod's operations queue on: pod UID, else namespace/name, else the container. */
export function podLineKey(pod: PodIdentity, key: AttachmentKey): string {
  if (pod.uid) return `uid:${pod.uid}`;
  if (pod.namespace && pod.name) return `pod:${pod.namespace}/${pod.name}`;
  return `container:${key.containerId}`;
}
