// `npm start` (vpcnetctl demo): a one-node VPC lab with three pods added through the real plugin
// exactly as a runtime would, a table of their VPC addresses with a live reachability check, then
// the agent's structured log until Ctrl-C, then everything removed.
import { execFile } from 'node:child_process';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type CniCall, type NetConfList, readConfList, runChain } from '../lab/cni-runtime.ts';

const run = promisify(execFile);

interface DemoPod {
  readonly name: string;
  readonly netns: string;
  readonly containerId: string;
  ip: string | undefined;
}

interface LabDesc {
  nodes: { name: string; netns: string; agentSocket: string; cniBinDir: string; cniConfDir: string }[];
  vpcHosts: { netns: string; ip: string }[];
}

async function ctl(repoRoot: string, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [join(repoRoot, 'bin', 'vpcnetctl'), ...args], {
    maxBuffer: 1 << 20,
  });
  return stdout;
}

async function reaches(fromNetns: string, ip: string): Promise<boolean> {
  try {
    await run('ip', ['netns', 'exec', fromNetns, 'ping', '-c', '1', '-W', '2', ip]);
    return true;
  } catch {
    return false;
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ')).join('\n');
}

/** Follows the agent's log file and prints its new lines until stopped. */
function followLog(path: string, out: (s: string) => void): () => void {
  let position = 0;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    try {
      const fh = await open(path, 'r');
      try {
        const { size } = await fh.stat();
        if (size > position) {
          const buf = Buffer.alloc(size - position);
          await fh.read(buf, 0, buf.length, position);
          position = size;
          out(buf.toString('utf8'));
        }
      } finally {
        await fh.close();
      }
    } catch {
      // the file may not exist yet
    }
    if (!stopped) timer = setTimeout(tick, 500);
  };
  let timer = setTimeout(tick, 0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The runtime's call for one demo pod on the lab's (only) node. */
function podCall(lab: LabDesc, pod: DemoPod, command: 'ADD' | 'DEL'): CniCall {
  const node = lab.nodes[0]!;
  return {
    nodeNetns: node.netns,
    cniBinDir: node.cniBinDir,
    command,
    containerId: pod.containerId,
    netns: `/var/run/netns/${pod.netns}`,
    ifName: 'eth0',
    args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: pod.name },
  };
}

export async function runDemo(argv: string[], repoRoot: string, write: (s: string) => void): Promise<number> {
  const out = (s: string) => {
    try {
      write(s);
    } catch {
      // stdout is gone (closed terminal or pipe): keep going, the teardown matters more
    }
  };
  // Ctrl-C at any point (also during set-up, also twice) ends in the teardown below, and a
  // terminal or pipe that went away with it must not kill the process halfway: the lab would stay.
  process.stdout.on('error', () => {});
  let stop = () => {};
  const stopRequested = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let stopping = false;
  const onSignal = () => {
    if (!stopping) out('\nstopping...\n');
    stopping = true;
    stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const check = () => {
    if (stopping) throw new Error('interrupted');
  };
  if (argv.includes('--help') || argv.includes('-h')) {
    out(
      'Usage: vpcnetctl demo [--name L] [--no-wait]\n\nBrings up a one-node lab with three pods; Ctrl-C tears it all down.\n',
    );
    return 0;
  }
  const nameAt = argv.indexOf('--name');
  const name = nameAt >= 0 ? (argv[nameAt + 1] ?? 'vpcdemo') : 'vpcdemo';
  const noWait = argv.includes('--no-wait');
  const pods: DemoPod[] = [1, 2, 3].map((k) => ({
    name: `demo-${k}`,
    netns: `${name}-pod${k}`,
    containerId: `demo${k}${Date.now().toString(16)}`,
    ip: undefined,
  }));
  let stopLog = () => {};
  let conf: NetConfList | undefined;
  let lab: LabDesc | undefined;
  const teardown = async () => {
    stopLog();
    out('\ntearing down: DEL each pod through the plugin, then lab down\n');
    for (const pod of pods) {
      if (lab && conf) {
        await runChain(podCall(lab, pod, 'DEL'), conf).catch((err: unknown) =>
          out(`DEL ${pod.name}: ${(err as Error).message}\n`),
        );
      }
    }
    await ctl(repoRoot, ['lab', 'down', '--name', name]).catch((err: unknown) =>
      out(`lab down: ${(err as Error).message}\n`),
    );
    out('done: no namespace, process or file of the lab is left\n');
  };
  try {
    // A demo that crashed earlier may have left its lab: remove it first (lab down is idempotent).
    await ctl(repoRoot, ['lab', 'down', '--name', name]);
    out(`bringing up lab ${name} (emulated VPC 10.0.0.0/16, one t3.medium node, a VPC host)...\n`);
    check();
    lab = JSON.parse(
      await ctl(repoRoot, ['lab', 'up', '--name', name, '--nodes', '1', '--detach', '--json']),
    ) as LabDesc;
    const node = lab.nodes[0]!;
    const host = lab.vpcHosts[0]!;
    conf = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    for (const pod of pods) {
      check();
      await run('ip', ['netns', 'add', pod.netns]);
      await ctl(repoRoot, [
        'lab',
        'pod',
        '--name',
        name,
        '--node',
        node.name,
        '--namespace',
        'default',
        '--pod',
        pod.name,
      ]);
      const result = (await runChain(podCall(lab, pod, 'ADD'), conf)) as { ips?: { address: string }[] };
      pod.ip = result.ips?.[0]?.address.split('/')[0];
    }
    const rows = [['POD', 'NETNS', 'VPC ADDRESS', `REACHES VPC HOST ${host.ip}`, 'REACHES OTHER PODS']];
    for (const pod of pods) {
      const toHost = await reaches(pod.netns, host.ip);
      const others = await Promise.all(
        pods
          .filter((p) => p !== pod && p.ip)
          .map(async (p) => `${p.name}:${(await reaches(pod.netns, p.ip!)) ? 'yes' : 'NO'}`),
      );
      rows.push([`default/${pod.name}`, pod.netns, pod.ip ?? '?', toHost ? 'yes' : 'NO', others.join(' ')]);
    }
    out(`\n${table(rows)}\n\n`);
    if (noWait) return 0;
    out(`serving; the agent's structured log follows. Ctrl-C tears everything down.\n`);
    stopLog = followLog(join(node.cniBinDir, '..', '..', 'agent.log'), out);
    await stopRequested;
    return 0;
  } catch (err) {
    if (!stopping) throw err;
    return 130;
  } finally {
    await teardown();
    for (const pod of pods) await run('ip', ['netns', 'del', pod.netns]).catch(() => {});
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
