// The Kubernetes client, loaded when first needed: @kubernetes/client-node costs most of a second to
// import, and an agent without an API (cnitool, podman) never pays it. In a cluster the agent
// authenticates as its service account; the lab's API takes plain HTTP.
import type { KubeApiConfig } from './kube-api-config.ts';

export type K8s = typeof import('@kubernetes/client-node');

export interface KubeClient {
  readonly k8s: K8s;
  readonly config: InstanceType<K8s['KubeConfig']>;
  readonly core: InstanceType<K8s['CoreV1Api']>;
}

export async function loadKubeClient(api: KubeApiConfig): Promise<KubeClient> {
  const k8s = await import('@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: 'cluster',
        server: api.baseUrl,
        // The client refuses plain HTTP unless told there is no TLS to verify (the lab's API).
        skipTLSVerify: api.baseUrl.startsWith('http://'),
        ...(api.caFile === undefined ? {} : { caFile: api.caFile }),
      },
    ],
    // The client re-reads the token file as it expires, so a rotated service-account token is used.
    users: [
      {
        name: 'agent',
        ...(api.token === undefined
          ? {}
          : { authProvider: { name: 'tokenFile', config: { tokenFile: api.token } } }),
      },
    ],
    contexts: [{ name: 'agent', cluster: 'cluster', user: 'agent' }],
    currentContext: 'agent',
  });
  return { k8s, config, core: config.makeApiClient(k8s.CoreV1Api) };
}

/** The HTTP status of a failed API call, if it has one (404 = not found). */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Rejects after `ms` with a message naming what did not answer: ADD must not hang on the API. */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
