// The plugin -> agent wire format (JSON over HTTP/1.1 on the agent's unix socket).
// The plugin forwards the raw request; the agent answers with exactly what the plugin prints.

export const AGENT_CNI_PATH = '/v1/cni';
/**
 * vpcnet's version as the plugin prints it (`vpcnet --version`): the plugin's layer imports no
 * infra, so it is repeated here and in native/wire.h; native-local.test.ts holds both to
 * src/infra/version.ts.
 */
export const PLUGIN_VERSION = '0.1.0';
export const DEFAULT_AGENT_SOCKET = '/run/vpcnet/agent.sock';

/**
 * The agent's socket for vpcnetctl when none is given: the agent's own setting
 * (VPCNET_AGENT_SOCKET) when the environment has it, as a DaemonSet container's has the agent's
 * ConfigMap (the probes, `kubectl exec ... vpcnetctl state`), else the installed default.
 */
export function defaultAgentSocket(environment: Readonly<Record<string, string | undefined>>): string {
  const set = environment.VPCNET_AGENT_SOCKET;
  return set === undefined || set.trim() === '' ? DEFAULT_AGENT_SOCKET : set;
}

/**
 * The largest request, in bytes of its JSON body ({env, stdin}), that the plugin sends and the
 * agent accepts; also the largest spool entry the agent reads (an entry is such a body). One limit
 * for both sides (MAX_REQUEST_BYTES in src/plugin/native/wire.h too): the plugin refuses a larger
 * request before it connects, so an oversized request is a permanent error, never "try again
 * later", and never spooled. A real config is a few KiB; 1 MiB bounds what 200 concurrent clients
 * can make the agent hold.
 */
export const MAX_REQUEST_BYTES = 1 << 20;

/** The one message for a request over MAX_REQUEST_BYTES (plugin and agent word it alike). */
export function requestTooLargeMessage(): string {
  return `request to the vpcnet agent is larger than ${MAX_REQUEST_BYTES} bytes`;
}

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

/** CNI spec versions vpcnet speaks, oldest first. The plugin answers VERSION from this list. */
export const SUPPORTED_CNI_VERSIONS: readonly string[] = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
/** Version used for VERSION answers and error objects when the request names none we can read. */
export const DEFAULT_CNI_VERSION = '1.0.0';

/** The answer to CNI VERSION (the plugin prints it without asking the agent). */
export interface VersionResult {
  readonly cniVersion: string;
  readonly supportedVersions: readonly string[];
}

/** Echo the requested version when we speak it, so the runtime can decode the answer; else the default. */
export function versionResult(requested: string | undefined): VersionResult {
  const cniVersion =
    requested !== undefined && SUPPORTED_CNI_VERSIONS.includes(requested) ? requested : DEFAULT_CNI_VERSION;
  return { cniVersion, supportedVersions: SUPPORTED_CNI_VERSIONS };
}
