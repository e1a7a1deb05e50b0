// `npm start` (vpcnetctl demo): a one-node VPC lab with three pods added through the real plugin
// exactly as a runtime would, and a table of their VPC addresses with live reachability checks,
// redrawn in place on a terminal until Ctrl-C, which removes everything. The agent's log stays in
// its file (named on screen): its JSON lines are for `tail -f`, not for the table's screen.
// One demo per lab name: a second `npm start` finds the first one running and leaves it alone.
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { errorText } from '../infra/error-text.ts';
import { getJson } from '../infra/unix-socket-json.ts';
import { type CniCall, type NetConfList, readConfList, runChain } from '../lab/cni-runtime.ts';
import { type LabDescription, labLayout } from '../lab/layout.ts';
import { describeProcess, isRecordedProcessAlive, readRecords, writeRecord } from '../lab/processes.ts';
import { table } from './output.ts';
import { UsageError } from './usage-error.ts';

const run = promisify(execFile);

export const DEMO_HELP = `Usage: vpcnetctl demo [--name L] [--no-wait]

Brings up a one-node lab L (default vpcdemo) with three pods added through the installed plugin,
and shows their VPC addresses and whether each reaches the VPC host and the other pods: on a
terminal the table is redrawn in place every few seconds. The agent's log goes to its file (the
path is printed). Ctrl-C removes the pods and the lab. A demo already running under the same name
is left alone (this one exits 1 saying so); a lab of that name left by a demo that died is removed
first.
  --no-wait   print the table once, then tear down (what the demo test runs)
`;

/** How the demo marks its lab as in use (a record in the lab's pids dir, which `lab down` honours). */
const DEMO_ROLE = 'demo';
const REFRESH_MS = 3000;

interface DemoPod {
  readonly name: string;
  readonly netns: string;
  readonly containerId: string;
  ip: string | undefined;
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

/** The runtime's call for one demo pod on the lab's (only) node. */
function podCall(lab: LabDescription, pod: DemoPod, command: 'ADD' | 'DEL'): CniCall {
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

/** The table's rows now: each pod's address and what it reaches, and the node's pool in one line. */
async function snapshot(lab: LabDescription, pods: readonly DemoPod[]): Promise<string[]> {
  const host = lab.vpcHosts[0]!;
  const rows = await Promise.all(
    pods.map(async (pod) => {
      const toHost = pod.ip === undefined ? false : await reaches(pod.netns, host.ip);
      const others = await Promise.all(
        pods
          .filter((p) => p !== pod && p.ip)
          .map(async (p) => `${p.name}:${(await reaches(pod.netns, p.ip!)) ? 'yes' : 'NO'}`),
      );
      return [`default/${pod.name}`, pod.netns, pod.ip ?? '?', toHost ? 'yes' : 'NO', others.join(' ')];
    }),
  );
  const lines = table(
    ['pod', 'netns', 'vpc address', `reaches vpc host ${host.ip}`, 'reaches other pods'],
    rows,
  )
    .trimEnd()
    .split('\n');
  return [...lines, '', await poolLine(lab)];
}

async function poolLine(lab: LabDescription): Promise<string> {
  try {
    const { body } = await getJson(lab.nodes[0]!.agentSocket, '/v1/state', 2000);
    const stats = (body as { pool?: { stats?: Record<string, number> } }).pool?.stats ?? {};
    return `node1 pool: ${stats.total ?? '?'} addresses, ${stats.assigned ?? '?'} assigned, ${stats.cooling ?? '?'} cooling, ${stats.available ?? '?'} free`;
  } catch (err) {
    return `node1 agent: does not answer (${errorText(err)})`;
  }
}

/** A demo already running under this lab name (its record is alive), if any. */
async function runningDemo(name: string): Promise<number | undefined> {
  const records = await readRecords(labLayout(name, 0).files.pidsDir);
  return records.find((r) => r.role === DEMO_ROLE && r.pid !== process.pid && isRecordedProcessAlive(r))?.pid;
}

export async function runDemo(
  argv: string[],
  repoRoot: string,
  write: (s: string) => void,
  isTty = process.stdout.isTTY === true,
): Promise<number> {
  const out = (s: string) => {
    try {
      write(s);
    } catch {
      // stdout is gone (closed terminal or pipe): keep going, the teardown matters more
    }
  };
  const { values } = parseArgs({
    args: argv,
    options: {
      name: { type: 'string' },
      'no-wait': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    out(DEMO_HELP);
    return 0;
  }
  const name = values.name ?? 'vpcdemo';
  if (name === '') throw new UsageError('--name needs a lab name');
  const layout = labLayout(name, 1);
  const other = await runningDemo(name);
  if (other !== undefined) {
    out(
      `a demo is already running in lab ${name} (pid ${other}); it is left alone. Stop it with Ctrl-C where it runs, or: vpcnetctl lab down --name ${name}\n`,
    );
    return 1;
  }
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
  const pods: DemoPod[] = [1, 2, 3].map((k) => ({
    name: `demo-${k}`,
    netns: `${name}-pod${k}`,
    containerId: `demo${k}${Date.now().toString(16)}`,
    ip: undefined,
  }));
  let conf: NetConfList | undefined;
  let lab: LabDescription | undefined;
  const demoRecord = join(layout.files.pidsDir, `${DEMO_ROLE}.json`);
  const teardown = async () => {
    out('\ntearing down: DEL each pod through the plugin, then lab down\n');
    for (const pod of pods) {
      if (lab && conf) {
        await runChain(podCall(lab, pod, 'DEL'), conf).catch((err: unknown) =>
          out(`DEL ${pod.name}: ${errorText(err)}\n`),
        );
      }
    }
    // Our own record goes first: `lab down` stops every recorded process, and this one waits for it.
    await rm(demoRecord, { force: true });
    await ctl(repoRoot, ['lab', 'down', '--name', name]).catch((err: unknown) =>
      out(`lab down: ${errorText(err)}\n`),
    );
    out('done: no namespace, process or file of the lab is left\n');
  };
  try {
    // A demo that died earlier may have left its lab (no live demo holds it): remove it first.
    await ctl(repoRoot, ['lab', 'down', '--name', name]);
    out(`bringing up lab ${name} (emulated VPC 10.0.0.0/16, one t3.medium node, a VPC host)...\n`);
    check();
    lab = JSON.parse(
      await ctl(repoRoot, ['lab', 'up', '--name', name, '--nodes', '1', '--detach', '--json']),
    ) as LabDescription;
    await writeRecord(layout.files.pidsDir, describeProcess(DEMO_ROLE, process.pid, 'demo'));
    const node = lab.nodes[0]!;
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
    const first = await snapshot(lab, pods);
    out(`\n${first.join('\n')}\n\n`);
    if (values['no-wait'] === true) return 0;
    const agentLog = layout.nodes[0]!.agentLog;
    out(
      [
        `serving. The agent's log: ${agentLog} (tail -f it)`,
        `Look around: vpcnetctl status --lab ${name}; vpcnetctl pods --lab ${name}; vpcnetctl explain --lab ${name} default/demo-1`,
        'Ctrl-C removes the pods and the lab.',
        '',
      ].join('\n'),
    );
    // Only the signal ends the wait: without a timer of its own Node would see nothing left to do.
    const keepAlive = setInterval(() => {}, 60_000);
    try {
      if (isTty) await redrawUntil(stopRequested, first.length + 4, () => snapshot(lab!, pods), out);
      else await stopRequested;
    } finally {
      clearInterval(keepAlive);
    }
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

/**
 * Redraws the table in place every few seconds until `stopped`: the cursor goes back up over the
 * table and the lines printed under it (`linesUp`), and each line is cleared before it is rewritten.
 */
async function redrawUntil(
  stopped: Promise<void>,
  linesUp: number,
  rows: () => Promise<string[]>,
  out: (s: string) => void,
): Promise<void> {
  let done = false;
  void stopped.then(() => {
    done = true;
  });
  while (!done) {
    await Promise.race([sleep(REFRESH_MS), stopped]);
    if (done) return;
    const lines = await rows();
    if (done) return;
    const stamp = `updated ${new Date().toLocaleTimeString()}`;
    out(
      `\u001b[${linesUp}A${[...lines, stamp].map((l) => `\u001b[2K${l}`).join('\n')}\n\u001b[${linesUp - lines.length - 1}B`,
    );
  }
}
