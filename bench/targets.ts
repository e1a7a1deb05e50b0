// What the benchmark drives: a CNI configuration installed on a "node" (a network namespace), exec'd
// exactly as a runtime would (src/lab/cni-runtime.ts). vpcnet's target is a lab node; the
// reference is Debian's bridge + host-local in a namespace of the bench's own.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runToSuccess } from '../src/infra/process.ts';
import {
  type CniCall,
  chainedPluginConfig,
  type NetConfList,
  readConfList,
  runChain,
} from '../src/lab/cni-runtime.ts';
import type { LabNodeDesc } from '../test/lab-fixture.ts';

export interface Target {
  readonly label: string;
  readonly nodeNetns: string;
  readonly cniBinDir: string;
  readonly list: NetConfList;
  /** The runtime stand-in that times execs (native/cni-exec.c), and the config file it feeds. */
  readonly driver: string;
  readonly confFile: string;
}

/** Compiles the runtime stand-in (bench/native/cni-exec.c) into `dir`; returns its path. */
export async function buildExecDriver(dir: string): Promise<string> {
  const out = join(dir, 'cni-exec');
  await runToSuccess([
    'cc',
    '-O2',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-o',
    out,
    join(import.meta.dirname, 'native', 'cni-exec.c'),
  ]);
  return out;
}

/** The one plugin's config as a runtime feeds it (the list's name and version, no prevResult). */
async function writeConf(list: NetConfList, file: string): Promise<string> {
  if (list.plugins.length !== 1) throw new Error(`${list.name}: the bench times single-plugin lists only`);
  await writeFile(
    file,
    JSON.stringify(chainedPluginConfig(list, list.plugins[0] as Record<string, unknown>, undefined)),
  );
  return file;
}

interface Job {
  readonly command: 'ADD' | 'DEL';
  readonly containerId: string;
  readonly netnsPath: string;
}

/** Runs the jobs through the runtime stand-in in the target's node namespace; rejects when a plugin fails. */
async function drive(
  t: Target,
  jobs: readonly Job[],
  concurrent: boolean,
): Promise<{ ms: number[]; wallMs: number }> {
  const type = String(t.list.plugins[0]?.type);
  const argv = [
    'ip',
    'netns',
    'exec',
    t.nodeNetns,
    t.driver,
    join(t.cniBinDir, type),
    t.cniBinDir,
    t.confFile,
  ];
  const stdin = jobs.map((j) => `${j.command} ${j.containerId} ${j.netnsPath}\n`).join('');
  const out = await runToSuccess(concurrent ? [...argv, '--concurrent'] : argv, { stdin });
  const ms: number[] = [];
  let wallMs = 0;
  const lines = out.stdout.split('\n');
  for (const [i, line] of lines.entries()) {
    const wall = /^wall ([\d.]+)$/.exec(line);
    if (wall) wallMs = Number(wall[1]);
    const m = /^([\d.]+) (\d+)$/.exec(line);
    if (!m) continue;
    if (m[2] !== '0') throw new Error(`${t.label}: plugin exited ${m[2]}: ${lines[i + 1] ?? ''}`);
    ms.push(Number(m[1]));
  }
  if (ms.length !== jobs.length)
    throw new Error(`${t.label}: the exec driver answered ${ms.length} of ${jobs.length} jobs`);
  return { ms, wallMs };
}

/** One plugin exec as a runtime makes it, timed from spawn to exit (the bench's own fork excluded). */
export async function timedPodCommand(
  t: Target,
  command: 'ADD' | 'DEL',
  containerId: string,
  netnsPath: string,
): Promise<number> {
  const { ms } = await drive(t, [{ command, containerId, netnsPath }], false);
  return ms[0] ?? 0;
}

/** Execs for every pod at once; the wall time from the first spawn to the last exit. */
export async function timedBurst(
  t: Target,
  command: 'ADD' | 'DEL',
  pods: readonly { containerId: string; netnsPath: string }[],
): Promise<{ wallMs: number; perPod: number[] }> {
  const r = await drive(
    t,
    pods.map((p) => ({ command, ...p })),
    true,
  );
  return { wallMs: r.wallMs, perPod: r.ms };
}

/** Debian's reference plugins, where `apt-get install containernetworking-plugins` puts them. */
export const referenceBinDir = '/usr/lib/cni';

export function cniCall(t: Target, command: 'ADD' | 'DEL', containerId: string, netnsPath: string): CniCall {
  return {
    nodeNetns: t.nodeNetns,
    cniBinDir: t.cniBinDir,
    command,
    containerId,
    netns: netnsPath,
    ifName: 'eth0',
    // IgnoreUnknown, as containerd sends it: the reference plugins refuse unknown CNI_ARGS otherwise.
    args: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'bench', K8S_POD_NAME: containerId },
  };
}

/** ADD or DEL of `containerId`'s eth0 through the target's whole chain; rejects when a plugin fails. */
export function runPodCommand(
  t: Target,
  command: 'ADD' | 'DEL',
  containerId: string,
  netnsPath: string,
): Promise<unknown> {
  return runChain(cniCall(t, command, containerId, netnsPath), t.list);
}

/** The reference's conflist: a bridge that is the pods' gateway, addresses from host-local. */
export function referenceConfList(
  name: string,
  bridge: string,
  subnet: string,
  dataDir: string,
  partners: readonly Record<string, unknown>[] = [],
): NetConfList {
  return {
    cniVersion: '1.0.0',
    name,
    plugins: [
      {
        type: 'bridge',
        bridge,
        isGateway: true,
        ipMasq: false,
        ipam: { type: 'host-local', ranges: [[{ subnet }]], dataDir },
      },
      ...partners,
    ],
  };
}

/** Creates namespace `netns` and the reference's conflist in `dir`; the caller removes the namespace. */
export async function referenceTarget(netns: string, dir: string, driver: string): Promise<Target> {
  await runToSuccess(['ip', 'netns', 'add', netns]);
  // containerd (section cri) binds its streaming server to 127.0.0.1 in this namespace.
  await runToSuccess(['ip', '-n', netns, 'link', 'set', 'lo', 'up']);
  const list = referenceConfList('benchref', 'cnibench0', '10.77.0.0/16', join(dir, 'ipam'));
  await writeFile(join(dir, 'ref.conflist'), JSON.stringify(list));
  const confFile = await writeConf(list, join(dir, 'ref.conf'));
  return {
    label: 'reference bridge+host-local',
    nodeNetns: netns,
    cniBinDir: referenceBinDir,
    list,
    driver,
    confFile,
  };
}

/**
 * vpcnet's plugin alone: the installed conflist chains portmap after it (as upstream's 10-aws
 * does), a partner the reference's bridge + host-local do not have here, so the ops and fill
 * sections compare the network plugins themselves. The CRI section runs both whole, each with
 * portmap (cri-sandbox.ts).
 */
export async function vpcnetTarget(node: LabNodeDesc, dir: string, driver: string): Promise<Target> {
  const installed = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
  const list = { ...installed, plugins: installed.plugins.slice(0, 1) };
  const confFile = await writeConf(list, join(dir, 'vpcnet.conf'));
  return { label: 'vpcnet', nodeNetns: node.netns, cniBinDir: node.cniBinDir, list, driver, confFile };
}

/** Pod sandboxes: network namespaces named `${prefix}${i}`, created at once, removed by `remove`. */
export interface Sandboxes {
  readonly names: readonly string[];
  path(i: number): string;
  remove(): Promise<void>;
}

export async function createSandboxes(prefix: string, count: number): Promise<Sandboxes> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const made: string[] = [];
  const remove = async (): Promise<void> => {
    for (const n of made) await runToSuccess(['ip', 'netns', 'del', n]).catch(() => undefined);
  };
  try {
    for (const n of names) {
      await runToSuccess(['ip', 'netns', 'add', n]);
      made.push(n);
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { names, path: (i) => `/var/run/netns/${names[i]}`, remove };
}
