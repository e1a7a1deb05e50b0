// How the fabric talks to the kernel: `ip -batch` for changes, sysctl writes and nft scripts
// inside a named namespace, and commands whose output it reads (link counters, nft counters).
// Every failure names the command and carries the kernel's message.
import { spawn } from 'node:child_process';

/** Runs `ip [-n netns] [-force] -batch -` with the given lines. */
export type IpBatchRunner = (
  netns: string | undefined,
  lines: readonly string[],
  force?: boolean,
) => Promise<void>;

/** Sets sysctls (`net.ipv4.conf.X.proxy_arp` → value) inside `netns`. */
export type SysctlWriter = (netns: string, settings: Readonly<Record<string, string>>) => Promise<void>;

/** Runs a program (optionally fed `stdin`) and resolves with its stdout. */
export type CommandRunner = (file: string, args: readonly string[], stdin?: string) => Promise<string>;

/** Failure of a command, with what was asked and what the kernel answered. */
export class IpCommandError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || 'failed'}`);
    this.name = 'IpCommandError';
  }
}

export const runCommandOutput: CommandRunner = (file, args, stdin) => {
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
    child.on('error', (err) => reject(new IpCommandError(command, err.message)));
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new IpCommandError(
            stdin === undefined ? command : `${command} <<< ${JSON.stringify(stdin)}`,
            stderr,
          ),
        );
    });
    // A program that exits without reading its input must not fail us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin ?? '');
  });
};

export async function runIpBatch(
  netns: string | undefined,
  lines: readonly string[],
  force = false,
): Promise<void> {
  if (lines.length === 0) return;
  const args = [...(netns === undefined ? [] : ['-n', netns]), ...(force ? ['-force'] : []), '-batch', '-'];
  try {
    await runCommandOutput('ip', args, `${lines.join('\n')}\n`);
  } catch (err) {
    // Quote the lines as one, so the message shows what the batch asked for.
    if (!(err instanceof IpCommandError)) throw err;
    throw new IpCommandError(`ip ${args.join(' ')} <<< ${JSON.stringify(lines.join('; '))}`, err.stderr);
  }
}

export async function writeSysctls(netns: string, settings: Readonly<Record<string, string>>): Promise<void> {
  const entries = Object.entries(settings).map(([k, v]) => `${k}=${v}`);
  await runCommandOutput('ip', ['netns', 'exec', netns, 'sysctl', '-q', '-w', ...entries]);
}

/** Messages that mean "already gone"; removal is idempotent. */
const GONE = /No such process|Cannot find device|No such file or directory|does not exist|Cannot assign/;

/** True when every line of the failure's message says "already gone". */
export function onlyAlreadyGone(err: unknown): boolean {
  if (!(err instanceof IpCommandError)) return false;
  const real = err.stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !GONE.test(l) && !/^Command failed/.test(l));
  return real.length === 0;
}

/** For `nft -f`: true when every error it reports is "No such file or directory" (already gone). */
export function nftOnlyAlreadyGone(err: unknown): boolean {
  if (!(err instanceof IpCommandError)) return false;
  const errors = err.stderr.split('\n').filter((l) => l.includes('Error:'));
  return errors.length > 0 && errors.every((l) => /No such file or directory/.test(l));
}

/** Runs removals to the end (`-force`); fails only for errors other than "already gone". */
export async function runRemovals(ip: IpBatchRunner, netns: string, lines: readonly string[]): Promise<void> {
  try {
    await ip(netns, lines, true);
  } catch (err) {
    if (!onlyAlreadyGone(err)) throw err;
  }
}
