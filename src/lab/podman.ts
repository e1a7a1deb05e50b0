// podman on a machine like this one: root lacks CAP_SYS_RESOURCE (a container in a container), so
// runc cannot raise the open-files and process limits to podman's defaults; every `podman run` and
// `podman build` names limits it may set ("error setting rlimit type 7: operation not permitted").
import { runProcess } from '../infra/process.ts';

/**
 * `podman` with the OCI runtime named. Debian's podman accepts crun or runc and uses whichever is
 * installed first; crun 1.8 refuses hosts with hybrid cgroups ("cgroups in hybrid mode not
 * supported"). The project installs runc (scripts/setup.sh) and every podman command that starts a
 * container says so, whatever else the host has.
 */
export const PODMAN = ['podman', '--runtime', 'runc'] as const;

export const PODMAN_ULIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'] as const;

/** Throws, saying how to get it, unless podman's store holds `image`. */
export async function assertImagePresent(image: string): Promise<void> {
  const r = await runProcess(['podman', 'image', 'exists', image]);
  if (r.code === 0) return;
  if (r.code === 127) throw new Error(`podman is not installed (apt-get install podman); it runs ${image}`);
  throw new Error(`image ${image} is not in podman's store: build it with \`npm run image\``);
}
