// Agent configuration, parsed once from the environment (see config-contract.md).
import { hostname } from 'node:os';
import { DEFAULT_DEL_SPOOL_DIR } from '../cni/wire.ts';

export interface AgentConfig {
  readonly agentSocket: string;
  readonly stateDir: string;
  readonly delSpoolDir: string;
  readonly nodeName: string;
  /** Base URL of the Kubernetes API; undefined = no API (cnitool, podman): regular networking only. */
  readonly kubeApi: KubeApiConfig | undefined;
  readonly vethPrefix: string;
  readonly mtu: number;
  /** Seconds an ADD may wait for the pool to grow when it has no free address. */
  readonly addWaitSeconds: number;
  /** Seconds between reconcile passes (drift repair, GC); 0 = no loop (one pass still runs at start). */
  readonly reconcileSeconds: number;
  /**
   * ENABLE_POD_ENI (upstream name). Branch ENIs are not built yet: when on, an ADD for a pod the
   * resource controller annotated with a branch ENI is refused rather than given the node's
   * security groups.
   */
  readonly enablePodEni: boolean;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export interface KubeApiConfig {
  readonly baseUrl: string;
  readonly token?: string;
  readonly caFile?: string;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

function positiveInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0) {
    throw new ConfigError(`${name} must be a positive integer, got '${raw}'`);
  }
  return Number(raw);
}

function nonNegativeInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a non-negative integer, got '${raw}'`);
  return Number(raw);
}

function kubeApiFrom(env: Env): KubeApiConfig | undefined {
  const explicit = env.VPCNET_KUBE_API;
  if (explicit !== undefined && explicit !== '') {
    if (!/^https?:\/\//.test(explicit))
      throw new ConfigError(`VPCNET_KUBE_API must be an http(s) URL, got '${explicit}'`);
    return { baseUrl: explicit.replace(/\/+$/, '') };
  }
  const host = env.KUBERNETES_SERVICE_HOST;
  if (host === undefined || host === '') return undefined;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
  return {
    baseUrl: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caFile: `${sa}/ca.crt`,
    token: `${sa}/token`,
  };
}

function bool(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ConfigError(`${name} must be true or false, got '${raw}'`);
}

export function agentConfigFromEnv(env: Env): AgentConfig {
  // Upstream users switching over must not get something else than they asked for in silence.
  if (bool(env, 'ENABLE_PREFIX_DELEGATION')) {
    throw new ConfigError(
      'ENABLE_PREFIX_DELEGATION=true is not supported yet: vpcnet assigns secondary IPs only',
    );
  }
  const stateDir = env.VPCNET_STATE_DIR || '/var/lib/vpcnet';
  const vethPrefix = env.VPCNET_VETH_PREFIX || 'vpc';
  if (!/^[a-z][a-z0-9]{0,3}$/.test(vethPrefix)) {
    throw new ConfigError(
      `VPCNET_VETH_PREFIX must be 1-4 lowercase letters/digits starting with a letter, got '${vethPrefix}'`,
    );
  }
  const mtu = positiveInt(env, 'VPCNET_MTU', 9001);
  if (mtu < 576 || mtu > 9001) throw new ConfigError(`VPCNET_MTU must be between 576 and 9001, got ${mtu}`);
  const logLevel = env.VPCNET_LOG_LEVEL || 'info';
  if (logLevel !== 'debug' && logLevel !== 'info' && logLevel !== 'warn' && logLevel !== 'error') {
    throw new ConfigError(`VPCNET_LOG_LEVEL must be debug, info, warn or error, got '${logLevel}'`);
  }
  return {
    agentSocket: env.VPCNET_AGENT_SOCKET || '/run/vpcnet/agent.sock',
    stateDir,
    // The plugin's own default, not one derived from the state dir: both sides must agree on
    // where DELs wait while the agent is down, also when only VPCNET_STATE_DIR is set.
    delSpoolDir: env.VPCNET_DEL_SPOOL_DIR || DEFAULT_DEL_SPOOL_DIR,
    nodeName: env.VPCNET_NODE_NAME || hostname(),
    kubeApi: kubeApiFrom(env),
    vethPrefix,
    mtu,
    addWaitSeconds: positiveInt(env, 'VPCNET_ADD_WAIT_SECONDS', 20),
    reconcileSeconds: nonNegativeInt(env, 'VPCNET_RECONCILE_SECONDS', 30),
    enablePodEni: bool(env, 'ENABLE_POD_ENI'),
    logLevel,
  };
}
