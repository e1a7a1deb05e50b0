// Section "ops": sequential ADD and DEL over N pods and a concurrent burst, vpcnet and the reference
// each exec'd as a runtime would (one process chain per operation), plus the cost of starting each
// plugin process alone (VERSION). The figures the first `npm run bench` printed, kept in its shape
// for comparison (it measured the reference first, then vpcnet; now they take turns).
import { join } from 'node:path';
import { execPlugin } from '../src/lab/cni-runtime.ts';
import { percentile, timed } from './stats.ts';
import {
  cniCall,
  createSandboxes,
  type Sandboxes,
  type Target,
  timedBurst,
  timedPodCommand,
} from './targets.ts';

export interface OpsSeries {
  readonly add: readonly number[];
  readonly del: readonly number[];
  readonly burstAddWallMs: number;
  readonly burstDelWallMs: number;
}

/** Both sides of the comparison: what each measured. */
export interface OpsComparison {
  readonly vpcnet: OpsSeries;
  readonly reference: OpsSeries;
}

interface Side {
  readonly t: Target;
  readonly sandboxes: Sandboxes;
  readonly add: number[];
  readonly del: number[];
}

async function burstWall(side: Side, command: 'ADD' | 'DEL', burst: number): Promise<number> {
  const pods = Array.from({ length: burst }, (_, i) => ({
    containerId: `burst${i}`,
    netnsPath: side.sandboxes.path(i),
  }));
  return (await timedBurst(side.t, command, pods)).wallMs;
}

/**
 * `pods` sequential ADDs then DELs, then `burst` concurrent ADDs, then as many concurrent DELs, on
 * both targets. The two take turns (sequential: pod by pod, who goes first alternating; bursts:
 * reference, vpcnet, vpcnet, reference), so a change in the machine's load meets both alike.
 */
export async function measureOps(
  vpcnet: Target,
  reference: Target,
  netnsPrefix: { readonly vpcnet: string; readonly reference: string },
  pods: number,
  burst: number,
): Promise<OpsComparison> {
  const count = Math.max(pods, burst);
  const refSandboxes = await createSandboxes(netnsPrefix.reference, count);
  try {
    const vpcSandboxes = await createSandboxes(netnsPrefix.vpcnet, count);
    try {
      const v: Side = { t: vpcnet, sandboxes: vpcSandboxes, add: [], del: [] };
      const r: Side = { t: reference, sandboxes: refSandboxes, add: [], del: [] };
      for (const command of ['ADD', 'DEL'] as const) {
        for (let i = 0; i < pods; i++) {
          for (const side of i % 2 === 0 ? [r, v] : [v, r]) {
            const ms = await timedPodCommand(side.t, command, `seq${i}`, side.sandboxes.path(i));
            (command === 'ADD' ? side.add : side.del).push(ms);
          }
        }
      }
      const refAdd = await burstWall(r, 'ADD', burst);
      const vpcAdd = await burstWall(v, 'ADD', burst);
      const vpcDel = await burstWall(v, 'DEL', burst);
      const refDel = await burstWall(r, 'DEL', burst);
      return {
        vpcnet: { add: v.add, del: v.del, burstAddWallMs: vpcAdd, burstDelWallMs: vpcDel },
        reference: { add: r.add, del: r.del, burstAddWallMs: refAdd, burstDelWallMs: refDel },
      };
    } finally {
      await vpcSandboxes.remove();
    }
  } finally {
    await refSandboxes.remove();
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
