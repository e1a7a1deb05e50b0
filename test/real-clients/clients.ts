// Where the real CNI clients live (built by scripts/real-clients.sh) and how a suite reacts when
// one is missing: outside CI it skips with a message naming what is missing; under CI=true it
// runs anyway and fails in `before`, so a CI run never passes by skipping.
import { access, constants } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type ProcessInput, type ProcessResult, runProcess } from '../../src/infra/process.ts';

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
  return (await runProcess(['sh', '-c', `command -v ${req.program}`])).code === 0;
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

/** A client command's time limit: a hung runtime fails its test instead of stalling the whole run. */
const CLIENT_TIMEOUT_MS = 60_000;

/** Runs a client's command to completion (killed after CLIENT_TIMEOUT_MS unless told otherwise); never throws on exit codes. */
export function runClient(argv: readonly string[], input: ProcessInput = {}): Promise<ProcessResult> {
  return runProcess(argv, { timeoutMs: CLIENT_TIMEOUT_MS, ...input });
}
