// Runs an installed CNI plugin chain exactly as a container runtime does: the conflist's plugins in
// order for ADD (each given the previous one's result as prevResult), in reverse for DEL, with the
// CNI_* environment, the plugin exec'd inside the node's network namespace. Used by `npm start`,
// the integration tests and the benchmark, so all three exercise the real plugin binary.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runProcess } from '../infra/process.ts';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC';

export interface CniCall {
  /** Node network namespace name to exec the plugin in; undefined = the current namespace. */
  readonly nodeNetns: string | undefined;
  readonly cniBinDir: string;
  readonly command: CniCommand;
  readonly containerId: string;
  /** Path of the pod's network namespace, e.g. /var/run/netns/X ('' allowed for a late DEL). */
  readonly netns: string;
  readonly ifName: string;
  /** CNI_ARGS entries, e.g. K8S_POD_NAMESPACE. */
  readonly args?: Readonly<Record<string, string>>;
  /**
   * What the runtime knows about the pod by capability (libcni's CapabilityArgs), e.g.
   * `portMappings` or `bandwidth`; a plugin receives a key only when its `capabilities` name it.
   */
  readonly capabilityArgs?: Readonly<Record<string, unknown>>;
}

export interface PluginOutput {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface NetConfList {
  readonly cniVersion: string;
  readonly name: string;
  readonly plugins: readonly Record<string, unknown>[];
}

export async function readConfList(path: string): Promise<NetConfList> {
  const raw = JSON.parse(await readFile(path, 'utf8')) as Partial<NetConfList>;
  if (typeof raw.cniVersion !== 'string' || typeof raw.name !== 'string' || !Array.isArray(raw.plugins)) {
    throw new Error(`${path} is not a CNI conflist (needs cniVersion, name, plugins)`);
  }
  return raw as NetConfList;
}

/** Execs one plugin binary with the CNI environment (and nothing else of ours) and `stdin`; a plugin that cannot be started is exit code 127. */
export async function execPlugin(call: CniCall, pluginType: string, stdin: string): Promise<PluginOutput> {
  const cniArgs = Object.entries(call.args ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(';');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerId,
    CNI_NETNS: call.netns,
    CNI_IFNAME: call.ifName,
    CNI_PATH: call.cniBinDir,
  };
  if (cniArgs) env.CNI_ARGS = cniArgs;
  const bin = join(call.cniBinDir, pluginType);
  const argv = call.nodeNetns === undefined ? [bin] : ['ip', 'netns', 'exec', call.nodeNetns, bin];
  const out = await runProcess(argv, { env, stdin });
  return { exitCode: out.code, stdout: out.stdout, stderr: out.stderr };
}

/**
 * The config one plugin of a list receives, built as libcni builds it: the plugin's own entry with
 * the list's name and cniVersion, prevResult when there is one, and `runtimeConfig` holding the
 * capability args the plugin declares in `capabilities` (replacing any static runtimeConfig; left
 * alone when the plugin gets none).
 */
export function chainedPluginConfig(
  list: NetConfList,
  plugin: Record<string, unknown>,
  prevResult: unknown,
  capabilityArgs: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  const conf: Record<string, unknown> = { ...plugin, cniVersion: list.cniVersion, name: list.name };
  if (prevResult !== undefined) conf.prevResult = prevResult;
  const declared = plugin.capabilities;
  const runtimeConfig: Record<string, unknown> = {};
  if (typeof declared === 'object' && declared !== null) {
    for (const [capability, supported] of Object.entries(declared)) {
      if (supported === true && Object.hasOwn(capabilityArgs, capability)) {
        runtimeConfig[capability] = capabilityArgs[capability];
      }
    }
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  return conf;
}

export class PluginFailed extends Error {
  constructor(
    readonly plugin: string,
    readonly output: PluginOutput,
  ) {
    super(`${plugin} failed (exit ${output.exitCode}): ${output.stdout.trim() || output.stderr.trim()}`);
    this.name = 'PluginFailed';
  }
}

/** One plugin's run within a chain: what it was given and what it answered. */
export interface ChainStep {
  readonly plugin: string;
  readonly config: Record<string, unknown>;
  readonly output: PluginOutput;
}

/**
 * Runs the chain for ADD/CHECK/DEL the way libcni does. Returns the last result (ADD) or undefined.
 * For CHECK and DEL, `prevResult` is the cached ADD result when the runtime has one; every plugin
 * gets that same result. `onStep` sees each plugin's run, in the order they ran.
 */
export async function runChain(
  call: CniCall,
  list: NetConfList,
  prevResult?: unknown,
  onStep?: (step: ChainStep) => void,
): Promise<unknown> {
  const plugins = call.command === 'DEL' ? [...list.plugins].reverse() : list.plugins;
  let result: unknown = call.command === 'ADD' ? undefined : prevResult;
  for (const plugin of plugins) {
    const type = plugin.type;
    if (typeof type !== 'string') throw new Error(`plugin entry without a type in conflist ${list.name}`);
    const config = chainedPluginConfig(list, plugin, result, call.capabilityArgs);
    const output = await execPlugin(call, type, JSON.stringify(config));
    onStep?.({ plugin: type, config, output });
    if (output.exitCode !== 0) throw new PluginFailed(type, output);
    if (call.command === 'ADD') result = JSON.parse(output.stdout) as unknown;
  }
  return call.command === 'ADD' ? result : undefined;
}
