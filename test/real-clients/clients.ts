// Where the real CNI clients live (built by scripts/real-clients.sh) and how a suite reacts when
// one is missing: outside CI it skips with a message naming what is missing; under CI=true it
// runs anyway and fails in `before`, so a CI run never passes by skipping.
import { execFile, spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The directory scripts/real-clients.sh fills (its default unless REAL_CLIENTS_DIR is set). */
export const clientsDir = process.env.REAL_CLIENTS_DIR ?? join(homedir(), '.cache', 'real-clients');

const underCi = process.env.CI === 'true' || process.env.CI === '1';

/** One thing a suite needs: a file in the clients cache or a program on PATH. */
export type Requirement = { file: string } | { program: string };

async function present(req: Requirement): Promise<boolean> {
  if ('file' in req) {
    return access(req.file, constants.R_OK).then(
      () => true,
      () => false,
    );
  }
  return new Promise((resolve) => {
    execFile('sh', ['-c', `command -v ${req.program}`], (err) => resolve(!err));
  });
}

function describeRequirement(req: Requirement): string {
  return 'file' in req ? req.file : `${req.program} on PATH`;
}

export interface ClientGate {
  /** The `skip` option for `describe`: a message outside CI when something is missing. */
  readonly skip: string | false;
  /** Call from `before`: throws (failing the suite) when something is missing. */
  assertPresent(): void;
}

export async function gate(client: string, reqs: Requirement[]): Promise<ClientGate> {
  const missing: string[] = [];
  for (const req of reqs) if (!(await present(req))) missing.push(describeRequirement(req));
  const message =
    missing.length === 0
      ? ''
      : `${client} not available (missing: ${missing.join(', ')}); run scripts/real-clients.sh`;
  return {
    skip: message !== '' && !underCi ? message : false,
    assertPresent() {
      if (message !== '') throw new Error(message);
    },
  };
}

export interface ProcessOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs argv to completion and returns its exit code and output; never throws on exit codes. */
export function runProcess(
  argv: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
}
