// Section "ops": sequential ADD and DEL over N pods and a concurrent burst, vpcnet and the reference
// each exec'd as a runtime would (one process chain per operation), plus the cost of starting each
// plugin process alone (VERSION). The figures today's `npm run bench` printed, kept for comparison.
import { join } from 'node:path';
import { execPlugin } from '../src/lab/cni-runtime.ts';
import { percentile, timed } from './stats.ts';
import { cniCall, createSandboxes, runPodCommand, type Target } from './targets.ts';

export interface OpsSeries {
  readonly add: readonly number[];
  readonly del: readonly number[];
  readonly burstAddWallMs: number;
  readonly burstDelWallMs: number;
}

/** `pods` sequential ADDs then DELs, then `burst` concurrent ADDs, then as many concurrent DELs. */
export async function measureOps(
  t: Target,
  netnsPrefix: string,
  pods: number,
  burst: number,
): Promise<OpsSeries> {
  const sandboxes = await createSandboxes(netnsPrefix, Math.max(pods, burst));
  try {
    const add: number[] = [];
    const del: number[] = [];
    for (let i = 0; i < pods; i++)
      add.push(await timed(() => runPodCommand(t, 'ADD', `seq${i}`, sandboxes.path(i))));
    for (let i = 0; i < pods; i++)
      del.push(await timed(() => runPodCommand(t, 'DEL', `seq${i}`, sandboxes.path(i))));
    const ids = Array.from({ length: burst }, (_, i) => i);
    const burstAddWallMs = await timed(() =>
      Promise.all(ids.map((i) => runPodCommand(t, 'ADD', `burst${i}`, sandboxes.path(i)))),
    );
    const burstDelWallMs = await timed(() =>
      Promise.all(ids.map((i) => runPodCommand(t, 'DEL', `burst${i}`, sandboxes.path(i)))),
    );
    return { add, del, burstAddWallMs, burstDelWallMs };
  } finally {
    await sandboxes.remove();
  }
}

/** p50 of 20 VERSION execs of `pluginType` in the target's node namespace: process start alone. */
export async function versionExecP50(t: Target, pluginType: string, binDir = t.cniBinDir): Promise<number> {
  const xs: number[] = [];
  const call = { ...cniCall({ ...t, cniBinDir: binDir }, 'ADD', 'version', ''), command: 'VERSION' as const };
  for (let i = 0; i < 20; i++) {
    xs.push(await timed(() => execPlugin(call, pluginType, '{"cniVersion":"1.0.0"}')));
  }
  return percentile(xs, 50);
}

/** The TypeScript forwarder the native plugin replaced, from the repo's bin/ (docs/design.md, The plugin). */
export function typescriptForwarderDir(repoRoot: string): string {
  return join(repoRoot, 'bin');
}
