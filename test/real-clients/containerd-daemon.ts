// A private containerd 1.6 (CRI plugin) for one suite: its own root, state, sockets, opt dir and
// runc root under one temporary directory, running in a lab node's network namespace with that
// node's CNI dirs, so every CNI call it makes lands on the lab's agent.
//
// Why the directory is a shared bind mount made before the lab comes up: with
// netns_mounts_under_state_dir containerd bind-mounts each pod's netns under its state dir, and
// the agent (which does the kernel work) opens that path from its own mount namespace, a slave
// copy that `ip netns exec` made of the root one when the agent started. On a real node both see
// the host's mounts. Here the root mount is private, so only a mount that is already shared when
// the agent's namespace is copied propagates into it. containerd itself is entered into the
// node's network namespace only (`nsenter --net`), staying in the root mount namespace, so its
// mounts reach the shared directory (under `ip netns exec` they would stay in a private slave).
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mustSucceed } from '../../src/infra/process.ts';
import type { LabNodeDesc } from '../lab-fixture.ts';
import { clientsDir, runClient } from './clients.ts';
import { type CriRuntime, criClient } from './cri.ts';

export const criProtoPath = join(clientsDir, 'cri-api.proto');
export const pauseImagePath = join(clientsDir, 'pause.tar');
const pauseImage = 'local.invalid/pause:1';

async function must(argv: string[]): Promise<string> {
  return (await mustSucceed(runClient)(argv)).stdout;
}

/** Creates the daemon's directory as a shared mount. Call before `lab up` (see above). */
export async function prepareContainerdDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join('/tmp', `${prefix}-containerd-`));
  await must(['mount', '--bind', dir, dir]);
  await must(['mount', '--make-shared', dir]);
  return dir;
}

/** Unmounts (the shared mount and whatever the daemon left under it) and removes `dir`. */
export async function removeContainerdDir(dir: string): Promise<void> {
  await runClient(['umount', '--recursive', '--lazy', dir]);
  await rm(dir, { recursive: true, force: true });
}

function configToml(dir: string, node: LabNodeDesc): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${dir}/root"
state = "${dir}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd-ttrpc.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
[${cri}]
  sandbox_image = "${pauseImage}"
  # root lacks CAP_SYS_RESOURCE here: runc cannot set the sandbox's oom_score_adj to -998.
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${dir}/runc"
  [${cri}.cni]
    bin_dir = "${node.cniBinDir}"
    conf_dir = "${node.cniConfDir}"
    max_conf_num = 1
`;
}

export interface PrivateContainerd {
  readonly dir: string;
  readonly socket: string;
  readonly cri: CriRuntime;
  /** Removes every sandbox (so their DELs reach the agent), stops the daemon, removes `dir`. */
  stop(): Promise<void>;
}

async function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** PIDs of the runc shims this daemon started (their command line names its socket). */
async function shimPids(socket: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.startsWith('/usr/bin/containerd-shim') && cmdline.includes(socket)) pids.push(Number(entry));
  }
  return pids;
}

/** Starts containerd in the node's network namespace in `dir` (from prepareContainerdDir). */
export async function startContainerd(dir: string, node: LabNodeDesc): Promise<PrivateContainerd> {
  const socket = join(dir, 'containerd.sock');
  // containerd sets up the pod's loopback with the `loopback` plugin from the same bin_dir, as
  // a node's distro-installed CNI dir would provide it.
  await copyFile('/usr/lib/cni/loopback', join(node.cniBinDir, 'loopback'));
  await writeFile(join(dir, 'config.toml'), configToml(dir, node));
  const log = await open(join(dir, 'containerd.log'), 'a');
  const child = spawn(
    'nsenter',
    [`--net=/run/netns/${node.netns}`, 'containerd', '--config', join(dir, 'config.toml')],
    { stdio: ['ignore', log.fd, log.fd] },
  );
  await log.close();
  const cri = criClient(criProtoPath, socket);

  const stop = async (): Promise<void> => {
    const ids = await cri.listPodSandboxIds().catch(() => [] as string[]);
    for (const id of ids) {
      await cri.stopPodSandbox(id).catch(() => undefined);
      await cri.removePodSandbox(id).catch(() => undefined);
    }
    cri.close();
    if (child.pid !== undefined && child.exitCode === null) {
      child.kill('SIGTERM');
      if (!(await waitForExit(child, 15000))) child.kill('SIGKILL');
      await waitForExit(child, 5000);
    }
    // A shim whose sandbox could not be removed outlives the daemon: end its containers, then it.
    const leftovers = await runClient(['runc', '--root', join(dir, 'runc', 'k8s.io'), 'list', '-q']);
    for (const id of leftovers.stdout.split('\n').filter(Boolean)) {
      await runClient(['runc', '--root', join(dir, 'runc', 'k8s.io'), 'delete', '--force', id]);
    }
    for (const pid of await shimPids(socket)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await removeContainerdDir(dir);
  };

  try {
    const deadline = Date.now() + 20000;
    for (;;) {
      if (child.exitCode !== null) {
        const tail = (await readFile(join(dir, 'containerd.log'), 'utf8').catch(() => '')).slice(-2000);
        throw new Error(`containerd exited with ${child.exitCode}: ${tail}`);
      }
      const ok = await cri.version().then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error('containerd did not answer CRI Version within 20 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    await must(['ctr', '--address', socket, '-n', 'k8s.io', 'images', 'import', pauseImagePath]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { dir, socket, cri, stop };
}
