// A kernel that forwards everything to `inner` except the runs, which go through `run` (a test
// holds, gates or records them). One place to forward from, so a method added to Kernel reaches
// every test wrapper.
import type { Kernel } from '../kernel.ts';

export function kernelWithRun(inner: Kernel, run: Kernel['run']): Kernel {
  return {
    run,
    readNode: () => inner.readNode(),
    readPod: (path, scope) => inner.readPod(path, scope),
    setupSnat: (cfg) => inner.setupSnat(cfg),
    setupNodePort: (cfg) => inner.setupNodePort(cfg),
    setupV4Egress: (cfg) => inner.setupV4Egress(cfg),
    setupV6Egress: (cfg) => inner.setupV6Egress(cfg),
    readNodeSysctl: (name) => inner.readNodeSysctl(name),
    removeAwsNodeFirewall: () => inner.removeAwsNodeFirewall(),
  };
}
