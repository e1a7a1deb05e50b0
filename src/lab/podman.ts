// podman on a machine like this one: root lacks CAP_SYS_RESOURCE (a container in a container), so
// runc cannot raise the open-files and process limits to podman's defaults; every `podman run` and
// `podman build` names limits it may set ("error setting rlimit type 7: operation not permitted").
import { runProcess } from '../infra/process.ts';

export const PODMAN_ULIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'] as const;

/** Throws, saying how to get it, unless podman's store holds `image`. */
export async function assertImagePresent(image: string): Promise<void> {
  const r = await runProcess(['podman', 'image', 'exists', image]);
  if (r.code === 0) return;
  if (r.code === 127) throw new Error(`podman is not installed (apt-get install podman); it runs ${image}`);
  throw new Error(`image ${image} is not in podman's store: build it with \`npm run image\``);
}
