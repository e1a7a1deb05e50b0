// A private podman 4.3 (CNI backend) for one suite: storage, run root, tmp dir, events log and
// network config dir under one temporary directory, so the host's podman state is untouched.
// Its network config dir holds a copy of the lab node's conflist and its CNI plugin dir is the
// node's bin dir. podman runs in the node's network namespace (`nsenter --net`, staying in the
// root mount namespace): the pod netns it bind-mounts under /run/netns must propagate to the
// agent, which opens it from its own mount namespace, a slave of /run/netns.
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandFailed, type ProcessResult } from '../../src/infra/process.ts';
import type { LabNodeDesc } from '../lab-fixture.ts';
import { clientsDir, runClient } from './clients.ts';

export const busyboxRootfsPath = join(clientsDir, 'busybox-rootfs.tar');
export const busyboxImage = 'local.invalid/busybox:1';
/** libcni's result cache; podman's CNI backend uses the host-global default. */
const cniResultsDir = '/var/lib/cni/results';

export interface PrivatePodman {
  readonly dir: string;
  /** `podman ARGS` with the private configuration, in the node's network namespace. */
  run(args: string[]): Promise<ProcessResult>;
  /** Like run, but throws with podman's stderr on a non-zero exit; returns trimmed stdout. */
  must(args: string[]): Promise<string>;
  /** Removes every container, ends leftover conmon processes, removes `dir`. */
  stop(): Promise<void>;
}

export async function startPodman(prefix: string, node: LabNodeDesc): Promise<PrivatePodman> {
  const dir = await mkdtemp(join('/tmp', `${prefix}-podman-`));
  const netDir = join(dir, 'net.d');
  await mkdir(netDir);
  await copyFile(join(node.cniConfDir, '10-vpcnet.conflist'), join(netDir, '10-vpcnet.conflist'));
  await writeFile(
    join(dir, 'containers.conf'),
    `[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "${dir}/events.log"
tmp_dir = "${dir}/tmp"
volume_path = "${dir}/volumes"
static_dir = "${dir}/root/libpod"
[network]
network_backend = "cni"
cni_plugin_dirs = ["${node.cniBinDir}"]
network_config_dir = "${netDir}"
`,
  );
  await writeFile(
    join(dir, 'storage.conf'),
    `[storage]
driver = "overlay"
graphroot = "${dir}/root"
runroot = "${dir}/runroot"
`,
  );
  const env = {
    ...process.env,
    CONTAINERS_CONF: join(dir, 'containers.conf'),
    CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf'),
  };
  const base = [
    'nsenter',
    `--net=/run/netns/${node.netns}`,
    'podman',
    '--root',
    join(dir, 'root'),
    '--runroot',
    join(dir, 'runroot'),
    '--tmpdir',
    join(dir, 'tmp'),
    '--network-config-dir',
    netDir,
  ];
  const run = (args: string[]): Promise<ProcessResult> => runClient([...base, ...args], { env });
  const must = async (args: string[]): Promise<string> => {
    const out = await run(args);
    if (out.code !== 0) throw new CommandFailed(['podman', ...args], out);
    return out.stdout.trim();
  };

  const stop = async (): Promise<void> => {
    const ids = (await run(['ps', '-aq', '--no-trunc'])).stdout.split('\n').filter(Boolean);
    await run(['rm', '--force', '--all', '--time', '0']);
    for (const id of ids) await rm(join(cniResultsDir, `vpcnet-${id}-eth0`), { force: true });
    // conmon outlives a podman that could not remove its container; its command line names `dir`.
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.startsWith('/usr/bin/conmon') && cmdline.includes(dir)) {
        try {
          process.kill(Number(entry), 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    // podman's storage bind-mounts its overlay home onto itself (dir/root/overlay) and leaves it
    // when its last command did not shut the driver down; `dir` itself is no mount point, so
    // `umount --recursive dir` would not reach it. Every mount under `dir` goes, deepest first.
    for (const mountPoint of await mountsUnder(dir)) {
      await runClient(['umount', '--lazy', mountPoint]).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await must(['import', busyboxRootfsPath, busyboxImage]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { dir, run, must, stop };
}

/** Mount points below `dir` (mountinfo's fifth field, its octal escapes undone), deepest first. */
async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const points = info
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))))
    .filter((p) => p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}
