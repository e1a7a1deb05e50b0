// A lab node's agent inside the vpcnet image (`lab up --agent-image`), run by podman with what the
// DaemonSet gives it: the node's network namespace, only the capabilities image/README.md names,
// the runtime's netns dir with HostToContainer propagation (rslave: namespaces mounted after the
// agent started appear inside), the CNI dirs, the state and socket dirs at the same paths, and the
// environment a host agent gets. The podman client is the supervisor's child; the agent runs under
// conmon, in its own PID namespace.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runProcess, runToSuccess } from '../../infra/process.ts';
import type { LabLayout, LabNode } from '../layout.ts';
import { PODMAN, PODMAN_ULIMITS } from '../podman.ts';
import type { ChildSpec } from './children.ts';

/** NET_ADMIN: links, addresses, routes, rules, nftables. SYS_ADMIN: setns into pod namespaces. */
export const AGENT_CAPABILITIES = ['NET_ADMIN', 'SYS_ADMIN'] as const;
export const RUNTIME_NETNS_DIR = '/var/run/netns';
/** The image's layout (issue 10): the agent, the CLI and the chained reference plugins. */
export const IMAGE_AGENT = '/opt/vpcnet/bin/vpcnetd';
export const IMAGE_CTL = '/opt/vpcnet/bin/vpcnetctl';
export const IMAGE_PARTNER_PLUGINS_DIR = '/opt/vpcnet/cni-partners';
/** Every container a lab starts carries this label with the lab's name. */
export const LAB_LABEL = 'io.vpcnet.lab';

/** The host's variables that mean nothing inside the image (host paths) or would break its Node (NODE_OPTIONS=--import tsx). */
const HOST_ONLY_ENV = new Set([
  'PATH',
  'HOME',
  'PWD',
  'OLDPWD',
  'SHLVL',
  '_',
  'HOSTNAME',
  'TERM',
  'TMPDIR',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_TEST_CONTEXT',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
]);

export function agentContainerName(layout: LabLayout, node: LabNode): string {
  return `vpcnet-lab-${layout.name}-${node.name}`;
}

/** The names passed with `--env NAME`: podman copies each value from its own environment, so
 * values (credentials included) never appear on a command line. */
export function containerEnvNames(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((k) => env[k] !== undefined && !HOST_ONLY_ENV.has(k) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .sort();
}

/** The node's dirs the agent uses, each mounted at its own path: socket, state, spool, CNI bin and conf. */
export function agentContainerDirs(node: LabNode): string[] {
  const dirs = [dirname(node.agentSocket), node.stateDir, node.spoolDir, node.cniBinDir, node.cniConfDir];
  return [...new Set(dirs)];
}

export interface AgentContainerOptions {
  readonly image: string;
  readonly name: string;
  readonly lab: string;
  readonly node: LabNode;
  readonly envNames: readonly string[];
}

export function agentContainerArgv(o: AgentContainerOptions): [string, ...string[]] {
  return [
    ...PODMAN,
    'run',
    '--rm',
    // A restart by the supervisor reuses the name while podman may still be removing the last one.
    '--replace',
    '--pull=never',
    '--name',
    o.name,
    '--label',
    `${LAB_LABEL}=${o.lab}`,
    '--network',
    `ns:${RUNTIME_NETNS_DIR}/${o.node.netns}`,
    '--cap-drop=all',
    ...AGENT_CAPABILITIES.map((c) => `--cap-add=${c}`),
    ...PODMAN_ULIMITS,
    '--mount',
    `type=bind,source=${RUNTIME_NETNS_DIR},destination=${RUNTIME_NETNS_DIR},bind-propagation=rslave`,
    ...agentContainerDirs(o.node).flatMap((d) => ['--volume', `${d}:${d}`]),
    ...o.envNames.flatMap((n) => ['--env', n]),
    o.image,
    IMAGE_AGENT,
  ];
}

export function containerAgentSpec(
  layout: LabLayout,
  node: LabNode,
  image: string,
  env: NodeJS.ProcessEnv,
  role: string,
): ChildSpec {
  const name = agentContainerName(layout, node);
  return {
    role,
    argv: agentContainerArgv({ image, name, lab: layout.name, node, envNames: containerEnvNames(env) }),
    env,
    cwd: '/',
    logFile: node.agentLog,
    cmdlineMatch: `--name ${name} `,
  };
}

/** `vpcnetctl install`'s arguments for a lab node: its own CNI dirs, socket and spool. */
export function installArgs(node: LabNode): string[] {
  return [
    'install',
    '--cni-bin-dir',
    node.cniBinDir,
    '--cni-conf-dir',
    node.cniConfDir,
    '--agent-socket',
    node.agentSocket,
    '--del-spool-dir',
    node.spoolDir,
  ];
}

/** The DaemonSet's init step, from the image: the plugin, the conflist and the chained plugins. */
export function installFromImageArgv(node: LabNode, image: string): string[] {
  return [
    ...PODMAN,
    'run',
    '--rm',
    '--pull=never',
    '--network=none',
    '--cap-drop=all',
    ...PODMAN_ULIMITS,
    '--volume',
    `${node.cniBinDir}:${node.cniBinDir}`,
    '--volume',
    `${node.cniConfDir}:${node.cniConfDir}`,
    image,
    IMAGE_CTL,
    ...installArgs(node),
    '--partner-plugins-dir',
    IMAGE_PARTNER_PLUGINS_DIR,
  ];
}

export async function installPluginFromImage(node: LabNode, image: string): Promise<void> {
  await runToSuccess(installFromImageArgv(node, image));
}

/** Recorded before the container starts, so that `lab down` removes it even after a crash. */
export async function recordAgentContainer(layout: LabLayout, name: string): Promise<void> {
  await mkdir(layout.files.containersDir, { recursive: true });
  await writeFile(join(layout.files.containersDir, name), `${name}\n`);
}

/** Removes the containers this lab recorded (by name, nothing else); podman's absence is logged. */
export async function removeRecordedContainers(
  layout: LabLayout,
  log: (line: Record<string, unknown>) => void,
): Promise<void> {
  const names = await readdir(layout.files.containersDir).catch(() => [] as string[]);
  for (const name of names) {
    const r = await runProcess(['podman', 'rm', '--force', '--ignore', '--time', '5', name]);
    if (r.code !== 0) {
      log({ msg: 'cannot remove agent container', level: 'error', container: name, error: r.stderr.trim() });
      continue;
    }
    await rm(join(layout.files.containersDir, name), { force: true });
    log({ msg: 'removed agent container', container: name });
  }
}
