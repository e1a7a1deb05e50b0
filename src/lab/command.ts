// Runs a program to completion and returns its stdout; failures carry the command line and stderr.
import { spawn } from 'node:child_process';

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
    readonly exitCode: number | null,
  ) {
    super(
      `${command} failed${exitCode === null ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no message'}`,
    );
    this.name = 'CommandError';
  }
}

export function runCommand(file: string, args: readonly string[], input?: string): Promise<string> {
  const command = [file, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (err) => reject(new CommandError(command, err.message, null)));
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new CommandError(command, stderr, code));
    });
    // A program that exits without reading its input must not fail us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}
