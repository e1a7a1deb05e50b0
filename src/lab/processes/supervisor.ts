// The lab's long-running process. It owns the emulator and agent processes, restarts an agent
// that dies (as a DaemonSet would, backing off when it crash-loops), and on SIGINT/SIGTERM stops
// its children and tears the lab down.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { errorText } from '../../infra/error-text.ts';
import { type LabDescription, labLayout } from '../layout.ts';
import { labDown } from '../verbs/down.ts';
import { assertLabAbsent, type LabUpOptions, labUp, type RunningLab, startChild } from '../verbs/up.ts';
import { agentRole, agentSpec } from './agents.ts';
import { describeProcess, writeRecord } from './processes.ts';

export interface SupervisorOptions extends LabUpOptions {
  /** Called once the lab is up (after lab.json is written). */
  readonly onReady?: (description: LabDescription) => void;
}

/** An agent that ran at least this long before dying is restarted at once; quicker deaths back off. */
const HEALTHY_RUN_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;

/** Brings the lab up, supervises it until SIGINT/SIGTERM, then tears it down. Resolves with an exit code. */
export async function runSupervisor(opts: SupervisorOptions): Promise<number> {
  const layout = labLayout(opts.name, opts.nodes ?? 1, opts.ipv6 === true);
  const log = opts.log;
  if (opts.stateDirPrepared !== true) await assertLabAbsent(opts.name);
  await mkdir(layout.files.pidsDir, { recursive: true, mode: 0o700 });
  await writeRecord(layout.files.pidsDir, describeProcess('supervisor', process.pid, ownCmdline()));

  let stopRequested: (() => void) | undefined;
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    stopRequested = resolve;
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    log({ msg: 'supervisor stopping', signal });
    stopping = true;
    stopRequested?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    let lab: RunningLab;
    try {
      lab = await labUp({ ...opts, stateDirPrepared: true });
    } catch (err) {
      const message = errorText(err);
      if (opts.keepStateDirOnFailure === true) {
        await writeFile(layout.files.error, `${JSON.stringify({ error: message })}\n`).catch(() => undefined);
      }
      throw err;
    }
    const tmp = `${layout.files.description}.tmp`;
    await writeFile(tmp, `${JSON.stringify(lab.description)}\n`);
    await rename(tmp, layout.files.description);
    log({ msg: 'lab ready', lab: opts.name });
    if (!stopping) {
      opts.onReady?.(lab.description);
      watch(lab, opts, () => stopping);
      // Signal handlers alone do not keep Node's event loop alive.
      const keepAlive = setInterval(() => undefined, 1 << 30);
      await stopped;
      clearInterval(keepAlive);
    }
    await labDown(opts.name, { log });
    log({ msg: 'lab torn down', lab: opts.name });
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function watch(lab: RunningLab, opts: SupervisorOptions, isStopping: () => boolean): void {
  const log = opts.log;
  const emulator = lab.children.get('emulator');
  emulator?.child.once('exit', (code, signal) => {
    if (isStopping()) return;
    // Its state (instances, ENIs) lived in its memory: a restart could not bring the lab back.
    log({ msg: 'emulator exited; the lab is broken, run lab down', level: 'error', code, signal });
  });
  for (const node of lab.layout.nodes) {
    let failures = 0;
    const keep = (child: ChildProcess, startedAt: number): void => {
      child.once('exit', (code, signal) => {
        if (isStopping()) return;
        failures = Date.now() - startedAt >= HEALTHY_RUN_MS ? 0 : failures + 1;
        const delayMs = failures === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 500 * 2 ** (failures - 1));
        log({ msg: 'agent exited; restarting', level: 'warn', node: node.name, code, signal, delayMs });
        setTimeout(() => {
          if (isStopping()) return;
          startChild(
            lab.children,
            agentSpec(lab.layout, node, opts.repoRoot, lab.podEni, lab.agentImage),
            lab.layout,
          ).then(
            (next) => {
              log({ msg: 'agent restarted', node: node.name, pid: next.pid });
              keep(next, Date.now());
            },
            (err: unknown) =>
              log({ msg: 'agent restart failed', level: 'error', node: node.name, error: errorText(err) }),
          );
        }, delayMs).unref();
      });
    };
    const agent = lab.children.get(agentRole(node));
    if (agent !== undefined) keep(agent.child, Date.now());
  }
}

function ownCmdline(): string {
  return readFileSync('/proc/self/cmdline', 'utf8').split('\0').join(' ');
}
