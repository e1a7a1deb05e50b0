// The plugin -> agent wire format (JSON over HTTP/1.1 on the agent's unix socket).
// The plugin forwards the raw request; the agent answers with exactly what the plugin prints.

export const AGENT_CNI_PATH = '/v1/cni';
export const DEFAULT_AGENT_SOCKET = '/run/vpcnet/agent.sock';
export const DEFAULT_DEL_SPOOL_DIR = '/var/lib/vpcnet/del-spool';

export interface ForwardedRequest {
  /** The CNI_* variables (and nothing else) from the plugin's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** stdin, verbatim. */
  readonly stdin: string;
}

export interface ForwardedResponse {
  /** Process exit status for the plugin (0 = success). */
  readonly exitCode: number;
  /** What the plugin prints on stdout (a result, a version object or a CNI error object). */
  readonly stdout: string;
}
