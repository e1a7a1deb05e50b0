// How many nodes run the agent: its DaemonSet's status.desiredNumberScheduled, one small GET. The
// agents of a cluster share EC2's per-account buckets, so each one's share of a bucket's refill
// is the refill divided by this count (the EC2 throttle Lease paces the agents by it).
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiStatus, KubeClient } from './kube-client.ts';
import type { LeaseName } from './lease/lease.ts';

/** The DaemonSet's desired count; undefined when there is no such DaemonSet. */
export async function daemonSetSize(
  client: Pick<KubeClient, 'request'>,
  where: LeaseName,
): Promise<number | undefined> {
  const path = `/apis/apps/v1/namespaces/${encodeURIComponent(where.namespace)}/daemonsets/${encodeURIComponent(where.name)}`;
  let body: unknown;
  try {
    body = await client.request('GET', path);
  } catch (err) {
    if (apiStatus(err) === 404) return undefined;
    throw err;
  }
  const status = (body as { status?: { desiredNumberScheduled?: unknown } } | null)?.status;
  const n = status?.desiredNumberScheduled;
  if (n === undefined) return undefined; // not yet counted by the controller
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw new Error(
      `DaemonSet ${where.namespace}/${where.name}: status.desiredNumberScheduled is not a whole number`,
    );
  return n;
}

export function kubeDaemonSetSize(api: KubeApiConfig, where: LeaseName, timeoutMs = 5000) {
  const client = new KubeClient(api, { timeoutMs });
  return (): Promise<number | undefined> => daemonSetSize(client, where);
}
