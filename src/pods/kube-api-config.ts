// How to reach the Kubernetes API: what the agent's client (kube-client.ts) needs, decided by the agent's configuration.
export interface KubeApiConfig {
  /** Base URL without a trailing slash: `https://10.96.0.1:443`. */
  readonly baseUrl: string;
  /** Path of a file holding the bearer token (the service account's); read again as it rotates (bearer-token.ts). */
  readonly token?: string;
  /** Path of the CA bundle that signs the API server's certificate. */
  readonly caFile?: string;
}
