// The one way vpcnet runs a program to completion and reads what it said: argv in (never a shell),
// optional stdin, environment and time limit; exit code and both streams out. Callers that need
// the program to succeed wrap the runner with mustSucceed, whose error names the command and
// carries the program's own message. Long-lived children (agents, the emulator) are not run here.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

export interface ProcessInput {
  /** Written to the program's stdin, which is then closed (closed at once when unset). */
  readonly stdin?: string | undefined;
  /** The program's whole environment; unset: this process's environment. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The program is killed (SIGKILL) when it runs longer than this; unset: no limit. */
  readonly timeoutMs?: number | undefined;
}

export interface ProcessResult {
  /** The exit code; 127 when the program could not be started; 128 + n when signal n ended it. */
  readonly code: number;
  readonly stdout: string;
  /**
   * What the program wrote to stderr. When it could not be started, or a signal ended it, a last
   * line says so: a caller that reports stderr alone still tells the operator why.
   */
  readonly stderr: string;
  /** The signal that ended the program, when one did. */
  readonly signal?: NodeJS.Signals;
}

/** Runs argv[0] with argv[1..] and resolves when it has exited and closed its output; never rejects. */
export type ProcessRunner = (argv: readonly string[], input?: ProcessInput) => Promise<ProcessResult>;

/** Exit code of a program that could not be started, as a shell reports it. */
export const NOT_STARTED = 127;

function withLine(stderr: string, line: string): string {
  return stderr === '' || stderr.endsWith('\n') ? `${stderr}${line}` : `${stderr}\n${line}`;
}

/** The real runner: spawns the program without a shell. */
export const runProcess: ProcessRunner = (argv, input = {}) =>
  new Promise((resolve) => {
    const [file, ...args] = argv;
    if (file === undefined || file === '') {
      resolve({ code: NOT_STARTED, stdout: '', stderr: 'empty command' });
      return;
    }
    const child = spawn(file, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(input.env === undefined ? {} : { env: input.env }),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let startError: Error | undefined;
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      startError = e;
    });
    const timer =
      input.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, input.timeoutMs);
    child.on('close', (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (startError !== undefined) {
        resolve({ code: NOT_STARTED, stdout, stderr: withLine(stderr, `${file}: ${startError.message}`) });
      } else if (signal !== null) {
        const why = timedOut ? ` (still running after ${input.timeoutMs} ms)` : '';
        resolve({
          code: 128 + (constants.signals[signal] ?? 0),
          stdout,
          stderr: withLine(stderr, `killed by ${signal}${why}`),
          signal,
        });
      } else {
        resolve({ code: code ?? 0, stdout, stderr });
      }
    });
    // A program that exits before reading its stdin closes the pipe; its exit code says what happened.
    child.stdin.on('error', () => {});
    child.stdin.end(input.stdin ?? '');
  });

/** Longest stdin quoted in a CommandFailed message: enough to recognise a batch or script. */
const QUOTED_STDIN_MAX = 400;

/** argv as an operator would type it; arguments with spaces or quotes are JSON-quoted. */
export function commandText(argv: readonly string[]): string {
  return argv.map((a) => (a === '' || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

/** A program that had to succeed did not: what was run, how it ended and what it said. */
export class CommandFailed extends Error {
  /** The command line, with its stdin quoted when it had one. */
  readonly command: string;

  constructor(
    argv: readonly string[],
    readonly result: ProcessResult,
    stdin?: string,
  ) {
    const quoted =
      stdin === undefined || stdin === ''
        ? ''
        : ` <<< ${JSON.stringify(stdin.length > QUOTED_STDIN_MAX ? `${stdin.slice(0, QUOTED_STDIN_MAX)}…` : stdin)}`;
    const command = `${commandText(argv)}${quoted}`;
    const how = result.signal !== undefined ? `killed by ${result.signal}` : `exit ${result.code}`;
    super(`${command} failed (${how}): ${result.stderr.trim() || 'no message'}`);
    this.name = 'CommandFailed';
    this.command = command;
  }

  get stderr(): string {
    return this.result.stderr;
  }
}

/** `run`, except that a program that does not exit 0 is a CommandFailed. */
export function mustSucceed(run: ProcessRunner): ProcessRunner {
  return async (argv, input) => {
    const result = await run(argv, input);
    if (result.code !== 0) throw new CommandFailed(argv, result, input?.stdin);
    return result;
  };
}

/** The real runner, failing unless the program exits 0. */
export const runToSuccess: ProcessRunner = mustSucceed(runProcess);
