// `vpcnetctl install`: what the DaemonSet's init step does — put the plugin (one self-contained
// file) into the CNI bin dir and the conflist into the CNI conf dir, each atomically (temp + rename),
// so a runtime never execs a half-written plugin or reads a half-written conflist. The conflist
// chains the reference portmap (and, when asked, bandwidth and tuning) after vpcnet; their binaries
// are put in place before the conflist that names them. Node sysctls the agent needs set (it sets
// none itself) are written first (node-sysctl.ts).
import { chmod, copyFile, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VPCNET_NETWORK_NAME } from '../cni/identifiers.ts';
import { trueOrFalse } from '../config/value-kinds.ts';
import { pathExists } from '../infra/path-exists.ts';
import {
  type ChainChoice,
  chainedEntries,
  chainedPlugins,
  DEFAULT_PARTNER_PLUGINS_DIR,
  planChainedBinaries,
} from './chained-plugins.ts';
import { disableTcpEarlyDemux, IPV6_FORWARDING, setNodeSysctl } from './node-sysctl.ts';
import { UsageError } from './usage-error.ts';

export const CONFLIST_NAME = '10-vpcnet.conflist';
/** aws-node's conflist: runtimes take the first conflist by name, and it sorts before vpcnet's. */
export const AWS_NODE_CONFLIST = '10-aws.conflist';
/** Where --replace-aws-node moves it: a name no CNI loader reads (.conf, .conflist, .json only). */
export const AWS_NODE_CONFLIST_REPLACED = `${AWS_NODE_CONFLIST}.replaced-by-vpcnet`;

export interface VpcnetPluginOptions {
  readonly agentSocket?: string;
  readonly delSpoolDir?: string;
  readonly mtu?: number;
}

export interface InstallOptions extends VpcnetPluginOptions {
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  /** The bundled plugin file to install. */
  readonly pluginSource: string;
  readonly chain: ChainChoice;
  /** Where the chained reference plugins' binaries are copied from when the bin dir lacks them. */
  readonly partnerPluginsDir: string;
  /** Node sysctls set first, under `procSys` (/proc/sys); absent: none is touched. */
  readonly nodeSysctls?: NodeSysctlChoice;
  /**
   * Moving a node from aws-node: aws-node's conflist is moved aside once vpcnet's is written.
   * Without it, an aws-node conflist in the conf dir stops the install (runtimes would keep using it).
   */
  readonly replaceAwsNode?: boolean;
}

export interface NodeSysctlChoice {
  readonly procSys: string;
  /** net.ipv6.conf.all.forwarding=1 (IPv6 pods, IPv6 egress). */
  readonly ipv6Forwarding: boolean;
  /** net.ipv4.tcp_early_demux=0 (DISABLE_TCP_EARLY_DEMUX). */
  readonly disableTcpEarlyDemux: boolean;
}

async function setNodeSysctls(c: NodeSysctlChoice): Promise<void> {
  if (c.ipv6Forwarding) await setNodeSysctl(c.procSys, IPV6_FORWARDING, '1');
  if (c.disableTcpEarlyDemux) await disableTcpEarlyDemux(c.procSys);
}

export function conflist(opts: VpcnetPluginOptions & { readonly chain: ChainChoice }): object {
  const plugin: Record<string, unknown> = { type: 'vpcnet' };
  if (opts.agentSocket !== undefined) plugin.agentSocket = opts.agentSocket;
  if (opts.delSpoolDir !== undefined) plugin.delSpoolDir = opts.delSpoolDir;
  if (opts.mtu !== undefined) plugin.mtu = opts.mtu;
  return { cniVersion: '1.0.0', name: VPCNET_NETWORK_NAME, plugins: [plugin, ...chainedEntries(opts.chain)] };
}

async function atomicWrite(path: string, write: (tmp: string) => Promise<void>, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await write(tmp);
  await chmod(tmp, mode);
  await rename(tmp, path);
}

export interface Installed {
  readonly plugin: string;
  readonly conflist: string;
  /** Chained plugins' binaries this run copied into the bin dir. */
  readonly copied: readonly string[];
  /** Where aws-node's conflist was moved (--replace-aws-node), if it was there. */
  readonly replaced?: string;
}

export async function install(opts: InstallOptions): Promise<Installed> {
  const awsConflist = join(opts.cniConfDir, AWS_NODE_CONFLIST);
  if (!opts.replaceAwsNode && (await pathExists(awsConflist))) {
    throw new Error(
      `aws-node's ${awsConflist} is in the CNI conf dir and runtimes would keep using it (it sorts before ${CONFLIST_NAME}): install with --replace-aws-node to move it aside (deploy/overlays/migration does; README, "Switching from aws-node"), or remove it`,
    );
  }
  // Before the conflist: no IPv6 pod is set up on a node that cannot forward to it.
  if (opts.nodeSysctls !== undefined) await setNodeSysctls(opts.nodeSysctls);
  // Every missing partner binary is found before anything is written.
  const binaries = await planChainedBinaries(
    chainedPlugins(opts.chain),
    opts.cniBinDir,
    opts.partnerPluginsDir,
  );
  await mkdir(opts.cniBinDir, { recursive: true });
  await mkdir(opts.cniConfDir, { recursive: true });
  const copied: string[] = [];
  for (const b of binaries) {
    if (b.action !== 'copy') continue;
    await atomicWrite(b.target, (tmp) => copyFile(b.source, tmp), 0o755);
    copied.push(b.target);
  }
  const plugin = join(opts.cniBinDir, 'vpcnet');
  const conf = join(opts.cniConfDir, CONFLIST_NAME);
  await atomicWrite(plugin, (tmp) => copyFile(opts.pluginSource, tmp), 0o755);
  // Last: once a runtime can read the conflist, every plugin it names is in place.
  await atomicWrite(conf, (tmp) => writeFile(tmp, `${JSON.stringify(conflist(opts), null, 2)}\n`), 0o644);
  // After vpcnet's conflist is in place: the conf dir never holds no network at all.
  if (opts.replaceAwsNode && (await pathExists(awsConflist))) {
    const replaced = join(opts.cniConfDir, AWS_NODE_CONFLIST_REPLACED);
    await rename(awsConflist, replaced);
    return { plugin, conflist: conf, copied, replaced };
  }
  return { plugin, conflist: conf, copied };
}

export const INSTALL_HELP = `Usage: vpcnetctl install --cni-bin-dir DIR --cni-conf-dir DIR [--agent-socket PATH]
                         [--del-spool-dir DIR] [--mtu N] [--no-portmap] [--bandwidth]
                         [--partner-plugins-dir DIR] [--ipv6-forwarding]
                         [--disable-tcp-early-demux] [--disable-pod-v6] [--replace-aws-node]

Installs the vpcnet CNI plugin as DIR/vpcnet (one self-contained file) and writes
${CONFLIST_NAME} into the conf dir. Both are replaced atomically. The conflist chains
the reference plugins after vpcnet, as the upstream's 10-aws.conflist does: portmap
(hostPorts, snat: true) unless --no-portmap, then bandwidth and tuning when asked. A chained
plugin missing from the bin dir is copied there from --partner-plugins-dir; when it
is in neither place, install fails and writes nothing.

  --agent-socket PATH   the agent's unix socket (default /run/vpcnet/agent.sock)
  --del-spool-dir DIR   where the plugin spools DELs while the agent is down
                        (default /var/lib/vpcnet/del-spool)
  --mtu N               pod interface MTU, for this network (default: the agent's
                        POD_MTU, else its AWS_VPC_ENI_MTU, else 9001)
  --no-portmap          leave portmap out of the chain
  --bandwidth           chain bandwidth (pod bandwidth annotations); the same as
                        the environment variable ENABLE_BANDWIDTH_PLUGIN=true
  --partner-plugins-dir DIR
                        where portmap and bandwidth are copied from
                        (default ${DEFAULT_PARTNER_PLUGINS_DIR}, Debian's containernetworking-plugins)
  --ipv6-forwarding     set net.ipv6.conf.all.forwarding=1 (IPv6 mode and IPv6 egress
                        need it; the agent refuses to start without it); the same as
                        ENABLE_IPv6=true or ENABLE_V6_EGRESS=true in the environment.
                        Needs a privileged, host-network container
  --disable-tcp-early-demux
                        set net.ipv4.tcp_early_demux=0 (kubelet probes of branch-ENI
                        pods in strict mode); the same as DISABLE_TCP_EARLY_DEMUX=true.
                        Needs a privileged, host-network container
  --disable-pod-v6      chain tuning, disabling IPv6 in every pod's namespace; the
                        same as DISABLE_POD_V6=true
  --replace-aws-node    moving a node from aws-node: once ${CONFLIST_NAME} is written,
                        aws-node's ${AWS_NODE_CONFLIST} is renamed ${AWS_NODE_CONFLIST_REPLACED}
                        (runtimes ignore it then). Without it, install refuses to run while
                        ${AWS_NODE_CONFLIST} is in the conf dir
  -h, --help            this text
`;

/** The options install accepts; --help names each of them (a test holds the two together). */
export const INSTALL_OPTIONS = {
  'cni-bin-dir': { type: 'string' },
  'cni-conf-dir': { type: 'string' },
  'agent-socket': { type: 'string' },
  'del-spool-dir': { type: 'string' },
  mtu: { type: 'string' },
  'no-portmap': { type: 'boolean' },
  bandwidth: { type: 'boolean' },
  'partner-plugins-dir': { type: 'string' },
  'ipv6-forwarding': { type: 'boolean' },
  'replace-aws-node': { type: 'boolean' },
  'disable-tcp-early-demux': { type: 'boolean' },
  'disable-pod-v6': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A true-or-false variable (ENABLE_BANDWIDTH_PLUGIN, ENABLE_IPv6, ...: the upstream's names); blank is unset. */
function flagFromEnv(env: Readonly<Record<string, string | undefined>>, name: string): boolean {
  const text = env[name]?.trim() ?? '';
  if (text === '') return false;
  const value = trueOrFalse.parse(text);
  if (value === undefined) {
    throw new Error(`${name} must be ${trueOrFalse.what}, got ${JSON.stringify(text)}`);
  }
  return value;
}

export async function runInstallCommand(
  argv: string[],
  pluginSource: string,
  out: (s: string) => void,
  env: Readonly<Record<string, string | undefined>>,
  procSys = '/proc/sys',
): Promise<number> {
  const { values } = parseArgs({ args: argv, options: INSTALL_OPTIONS, strict: true });
  if (values.help) {
    out(INSTALL_HELP);
    return 0;
  }
  const binDir = values['cni-bin-dir'];
  const confDir = values['cni-conf-dir'];
  if (!binDir || !confDir) throw new UsageError('install needs --cni-bin-dir and --cni-conf-dir');
  let mtu: number | undefined;
  if (values.mtu !== undefined) {
    mtu = Number(values.mtu);
    if (!Number.isInteger(mtu) || mtu < 576 || mtu > 9001)
      throw new UsageError(`--mtu must be an integer 576..9001, got ${values.mtu}`);
  }
  // A switch is on by its flag or, as upstream's init container reads them, its variable.
  const on = (flag: keyof typeof INSTALL_OPTIONS, ...names: string[]) =>
    values[flag] === true || names.some((n) => flagFromEnv(env, n));
  const sysctls: NodeSysctlChoice = {
    procSys,
    ipv6Forwarding: on('ipv6-forwarding', 'ENABLE_IPv6', 'ENABLE_V6_EGRESS'),
    disableTcpEarlyDemux: on('disable-tcp-early-demux', 'DISABLE_TCP_EARLY_DEMUX'),
  };
  const done = await install({
    cniBinDir: binDir,
    cniConfDir: confDir,
    pluginSource,
    chain: {
      portmap: !values['no-portmap'],
      bandwidth: on('bandwidth', 'ENABLE_BANDWIDTH_PLUGIN'),
      tuning: on('disable-pod-v6', 'DISABLE_POD_V6'),
    },
    partnerPluginsDir: values['partner-plugins-dir'] ?? DEFAULT_PARTNER_PLUGINS_DIR,
    ...(values['agent-socket'] !== undefined ? { agentSocket: values['agent-socket'] } : {}),
    ...(values['del-spool-dir'] !== undefined ? { delSpoolDir: values['del-spool-dir'] } : {}),
    ...(mtu !== undefined ? { mtu } : {}),
    ...(sysctls.ipv6Forwarding || sysctls.disableTcpEarlyDemux ? { nodeSysctls: sysctls } : {}),
    ...(values['replace-aws-node'] === true ? { replaceAwsNode: true } : {}),
  });
  const copied = done.copied.length > 0 ? ` (copied ${done.copied.join(', ')})` : '';
  const replaced = done.replaced === undefined ? '' : `; aws-node's conflist moved to ${done.replaced}`;
  out(`installed ${done.plugin} and ${done.conflist}${copied}${replaced}\n`);
  return 0;
}
