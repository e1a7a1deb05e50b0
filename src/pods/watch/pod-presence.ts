// Whether the pod an attachment was made for still exists in the Kubernetes API: what the agent's
// background GC of dead pods asks (upstream #3109). Only the API's own answer counts as "absent":
// a 404, or a pod of that name that is another one (another UID, or bound to another node). An API
// that cannot be reached proves nothing, so the question fails rather than answering.
import { errorText } from '../../infra/error-text.ts';
import type { KubeApiConfig } from '../kube-api-config.ts';
import { apiStatus, KubeClient } from '../kube-client.ts';
import type { PodMetadata } from '../pod-metadata.ts';

/** The pod as the runtime named it on ADD (CNI_ARGS K8S_POD_*). */
export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

export type PodPresence = 'present' | 'absent';

export interface PodPresenceSource {
  /** Throws when the API gives no answer (unreachable, timeout, 5xx, refused). */
  presence(pod: PodRef): Promise<PodPresence>;
}

export class PodPresenceError extends Error {
  override name = 'PodPresenceError';
}

/**
 * Asks the API directly (one GET, never a cache: a watch that lags would report a pod gone that was
 * only created). The GC asks only about attachments whose namespace is already gone, which are few;
 * the client opens no connection before the first question.
 */
export function kubePodPresence(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): PodPresenceSource {
  const client = new KubeClient(api, { timeoutMs });
  return {
    async presence(pod) {
      const what = `GET pod ${pod.namespace}/${pod.name} from ${api.baseUrl}`;
      let found: PodMetadata;
      try {
        found = await client.getPod(pod.namespace, pod.name);
      } catch (err) {
        if (apiStatus(err) === 404) return 'absent';
        throw new PodPresenceError(`${what}: ${errorText(err)}`, { cause: err });
      }
      // A pod's node never changes once it is bound: a pod of this name elsewhere is a new one.
      if (pod.uid !== undefined && found.uid !== pod.uid) return 'absent';
      if (found.nodeName !== undefined && found.nodeName !== nodeName) return 'absent';
      return 'present';
    },
  };
}
