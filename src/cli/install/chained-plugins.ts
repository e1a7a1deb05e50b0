// The reference plugins vpcnet's conflist chains after itself, as the upstream's 10-aws.conflist
// does: portmap (hostPort, with SNAT so that a node reaches its own hostPorts) by default, bandwidth
// when asked, and tuning to disable IPv6 inside pods (upstream's DISABLE_POD_V6). They are not ours: their binaries come from the containernetworking-plugins package
// and must sit beside vpcnet in the CNI bin dir, since a runtime looks there for every plugin of a list.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

export type ChainedPlugin = 'portmap' | 'bandwidth' | 'tuning';

/** Which reference plugins follow vpcnet in the conflist. */
export interface ChainChoice {
  readonly portmap: boolean;
  readonly bandwidth: boolean;
  /** `tuning` writing IPv6 off into each pod's namespace (DISABLE_POD_V6); absent: false. */
  readonly tuning?: boolean;
}

/** Debian's containernetworking-plugins installs the reference plugins here. */
export const DEFAULT_PARTNER_PLUGINS_DIR = '/usr/lib/cni';

// A plugin's `capabilities` gate which runtimeConfig keys libcni passes it (the runtime's port
// mappings, the pod's bandwidth annotations).
// tuning writes the sysctls in the pod's namespace after vpcnet built it, as upstream's conflist
// does with DISABLE_POD_V6 (the agent cannot: its /proc/sys is read-only).
const ENTRIES: Readonly<Record<ChainedPlugin, Record<string, unknown>>> = {
  portmap: { type: 'portmap', capabilities: { portMappings: true }, snat: true },
  bandwidth: { type: 'bandwidth', capabilities: { bandwidth: true } },
  tuning: {
    type: 'tuning',
    sysctl: {
      'net.ipv6.conf.all.disable_ipv6': '1',
      'net.ipv6.conf.default.disable_ipv6': '1',
      'net.ipv6.conf.lo.disable_ipv6': '1',
    },
  },
};

/** The chained plugins in chain order: portmap, then bandwidth, then tuning, as upstream appends them. */
export function chainedPlugins(choice: ChainChoice): ChainedPlugin[] {
  const order: ChainedPlugin[] = ['portmap', 'bandwidth', 'tuning'];
  return order.filter((p) => choice[p] === true);
}

export function chainedEntries(choice: ChainChoice): Record<string, unknown>[] {
  return chainedPlugins(choice).map((p) => structuredClone(ENTRIES[p]));
}

/** What to do about one chained plugin's binary before the conflist names it. */
export type BinaryPlan =
  | { readonly plugin: ChainedPlugin; readonly action: 'present'; readonly target: string }
  | {
      readonly plugin: ChainedPlugin;
      readonly action: 'copy';
      readonly source: string;
      readonly target: string;
    };

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

function howToFix(plugin: ChainedPlugin): string {
  const leaveOut = {
    portmap: 'leave portmap out with --no-portmap',
    bandwidth: 'leave out --bandwidth (and ENABLE_BANDWIDTH_PLUGIN)',
    tuning: 'leave out --disable-pod-v6 (and DISABLE_POD_V6)',
  }[plugin];
  return `install Debian's containernetworking-plugins, point --partner-plugins-dir at a dir that has it, or ${leaveOut}`;
}

/**
 * Decides, before anything is written, where each chained plugin's binary comes from: already in
 * the bin dir, else copied from `partnerDir`. Fails naming every file that is missing, so that a
 * conflist never names a plugin the runtime cannot exec.
 */
export async function planChainedBinaries(
  plugins: readonly ChainedPlugin[],
  binDir: string,
  partnerDir: string,
): Promise<BinaryPlan[]> {
  const plans: BinaryPlan[] = [];
  const missing: string[] = [];
  for (const plugin of plugins) {
    const target = join(binDir, plugin);
    const source = join(partnerDir, plugin);
    if (await isFile(target)) plans.push({ plugin, action: 'present', target });
    else if (await isFile(source)) plans.push({ plugin, action: 'copy', source, target });
    else missing.push(`${plugin}: neither ${target} nor ${source} exists; ${howToFix(plugin)}`);
  }
  if (missing.length > 0) {
    throw new Error(`cannot chain the reference plugins after vpcnet:\n  ${missing.join('\n  ')}`);
  }
  return plans;
}
