// `vpcnetctl install`: what the DaemonSet's init step does — put the plugin (one self-contained
// file) into the CNI bin dir and the conflist into the CNI conf dir, each atomically (temp + rename),
// so a runtime never execs a half-written plugin or reads a half-written conflist.
import { chmod, copyFile, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

export const CONFLIST_NAME = '10-vpcnet.conflist';
export const NETWORK_NAME = 'vpcnet';

export interface InstallOptions {
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  readonly agentSocket?: string;
  readonly delSpoolDir?: string;
  readonly mtu?: number;
  /** The bundled plugin file to install. */
  readonly pluginSource: string;
}

export function conflist(opts: Omit<InstallOptions, 'cniBinDir' | 'cniConfDir' | 'pluginSource'>): object {
  const plugin: Record<string, unknown> = { type: 'vpcnet' };
  if (opts.agentSocket !== undefined) plugin.agentSocket = opts.agentSocket;
  if (opts.delSpoolDir !== undefined) plugin.delSpoolDir = opts.delSpoolDir;
  if (opts.mtu !== undefined) plugin.mtu = opts.mtu;
  return { cniVersion: '1.0.0', name: NETWORK_NAME, plugins: [plugin] };
}

async function atomicWrite(path: string, write: (tmp: string) => Promise<void>, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await write(tmp);
  await chmod(tmp, mode);
  await rename(tmp, path);
}

export async function install(opts: InstallOptions): Promise<{ plugin: string; conflist: string }> {
  await mkdir(opts.cniBinDir, { recursive: true });
  await mkdir(opts.cniConfDir, { recursive: true });
  const plugin = join(opts.cniBinDir, 'vpcnet');
  const conf = join(opts.cniConfDir, CONFLIST_NAME);
  await atomicWrite(plugin, (tmp) => copyFile(opts.pluginSource, tmp), 0o755);
  await atomicWrite(conf, (tmp) => writeFile(tmp, `${JSON.stringify(conflist(opts), null, 2)}\n`), 0o644);
  return { plugin, conflist: conf };
}

export const INSTALL_HELP = `Usage: vpcnetctl install --cni-bin-dir DIR --cni-conf-dir DIR [--agent-socket PATH]
                         [--del-spool-dir DIR] [--mtu N]

Installs the vpcnet CNI plugin as DIR/vpcnet (one self-contained file) and writes
${CONFLIST_NAME} into the conf dir. Both are replaced atomically.

  --agent-socket PATH   the agent's unix socket (default /run/vpcnet/agent.sock)
  --del-spool-dir DIR   where the plugin spools DELs while the agent is down
                        (default /var/lib/vpcnet/del-spool)
  --mtu N               pod interface MTU (default: the agent's VPCNET_MTU, 9001)
`;

export async function runInstallCommand(
  argv: string[],
  pluginSource: string,
  out: (s: string) => void,
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'cni-bin-dir': { type: 'string' },
      'cni-conf-dir': { type: 'string' },
      'agent-socket': { type: 'string' },
      'del-spool-dir': { type: 'string' },
      mtu: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    out(INSTALL_HELP);
    return 0;
  }
  const binDir = values['cni-bin-dir'];
  const confDir = values['cni-conf-dir'];
  if (!binDir || !confDir)
    throw new Error(`install needs --cni-bin-dir and --cni-conf-dir\n\n${INSTALL_HELP}`);
  let mtu: number | undefined;
  if (values.mtu !== undefined) {
    mtu = Number(values.mtu);
    if (!Number.isInteger(mtu) || mtu < 576 || mtu > 9001)
      throw new Error(`--mtu must be an integer 576..9001, got ${values.mtu}`);
  }
  const done = await install({
    cniBinDir: binDir,
    cniConfDir: confDir,
    pluginSource,
    ...(values['agent-socket'] !== undefined ? { agentSocket: values['agent-socket'] } : {}),
    ...(values['del-spool-dir'] !== undefined ? { delSpoolDir: values['del-spool-dir'] } : {}),
    ...(mtu !== undefined ? { mtu } : {}),
  });
  out(`installed ${done.plugin} and ${done.conflist}\n`);
  return 0;
}
