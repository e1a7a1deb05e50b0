// How the dataplane runs kernel tools: argv in, exit code and both streams out, so that a failure
// can be reported with the tool's own message. Injected, so tests can wrap or fake it.
import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export type CommandRunner = (argv: readonly string[], stdin?: string) => Promise<CommandResult>;

/** The real runner: spawns argv[0] without a shell; a spawn failure is reported as code 127. */
export const spawnRunner: CommandRunner = (argv, stdin) =>
  new Promise((resolve) => {
    const [file, ...args] = argv;
    if (file === undefined) {
      resolve({ code: 127, stdout: '', stderr: 'empty command' });
      return;
    }
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let spawnError: Error | undefined;
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      spawnError = e;
    });
    // A tool that exits before reading stdin closes the pipe; its exit code says what happened.
    child.stdin.on('error', () => {});
    child.on('close', (code, signal) => {
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({
        code: spawnError ? 127 : (code ?? 128),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: spawnError
          ? `${file}: ${spawnError.message}`
          : signal
            ? `${stderr}killed by ${signal}`
            : stderr,
      });
    });
    child.stdin.end(stdin ?? '');
  });
