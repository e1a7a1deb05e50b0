// Starting the lab's long-running processes (the emulator, one agent per node) inside their
// namespaces, each with its output appended to a log file and its PID recorded for `lab down`.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describeProcess, writeRecord } from './processes.ts';

export interface ChildSpec {
  /** Record name, e.g. `emulator`, `agent-node1`. */
  readonly role: string;
  readonly argv: readonly [string, ...string[]];
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly logFile: string;
  /** A piece of the command line that stays through the `ip netns exec` → program exec chain. */
  readonly cmdlineMatch: string;
}

/** How to run vpcnetctl: the built bin/vpcnetctl (the lab runs what users run). */
export function ctlArgv(repoRoot: string): [string, ...string[]] {
  const built = join(repoRoot, 'bin', 'vpcnetctl');
  if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first`);
  return [process.execPath, built];
}

/** Spawns in its own session (a terminal's Ctrl-C reaches the supervisor only) and records it. */
export async function spawnRecorded(spec: ChildSpec, pidsDir: string): Promise<ChildProcess> {
  const fd = openSync(spec.logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    const [file, ...args] = spec.argv;
    child = spawn(file, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', fd, fd],
      detached: true,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    const err = await new Promise<Error>((resolve) => child.once('error', resolve));
    throw new Error(`cannot start ${spec.role} (${spec.argv.join(' ')}): ${err.message}`);
  }
  await writeRecord(pidsDir, describeProcess(spec.role, pid, spec.cmdlineMatch));
  return child;
}
