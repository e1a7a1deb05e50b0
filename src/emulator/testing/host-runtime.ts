// Test support: a container runtime that runs an exec's command on this host as it is, in the
// test's environment, whatever the pod. The exec handler's tests need a command that does what
// they say (print, exit with a code, echo stdin); the lab's runtime (src/lab/pod-runtime.ts) is
// the one that maps DaemonSet pods to their nodes.
import type { ContainerRuntime } from '../kube/pod-exec.ts';

export const hostRuntime: ContainerRuntime = (request) => {
  const [file = '', ...args] = request.command;
  return { file, args, env: { ...process.env } };
};
