// How the fabric talks to the kernel: `ip -batch` for changes, sysctl writes and nft scripts
// inside a named namespace, and commands whose output it reads (link counters, nft counters), all
// through the process runner of src/infra. Every failure is a CommandFailed naming the command
// and carrying the kernel's message.
import { CommandFailed, runToSuccess } from '../../infra/process.ts';

/** Runs `ip [-n netns] [-force] -batch -` with the given lines. */
export type IpBatchRunner = (
  netns: string | undefined,
  lines: readonly string[],
  force?: boolean,
) => Promise<void>;

/** Sets sysctls (`net.ipv4.conf.X.proxy_arp` → value) inside `netns`. */
export type SysctlWriter = (netns: string, settings: Readonly<Record<string, string>>) => Promise<void>;

export async function runIpBatch(
  netns: string | undefined,
  lines: readonly string[],
  force = false,
): Promise<void> {
  if (lines.length === 0) return;
  const args = [...(netns === undefined ? [] : ['-n', netns]), ...(force ? ['-force'] : []), '-batch', '-'];
  // The error quotes the batch (stdin), so the message shows what was asked for.
  await runToSuccess(['ip', ...args], { stdin: `${lines.join('\n')}\n` });
}

export async function writeSysctls(netns: string, settings: Readonly<Record<string, string>>): Promise<void> {
  const entries = Object.entries(settings).map(([k, v]) => `${k}=${v}`);
  await runToSuccess(['ip', 'netns', 'exec', netns, 'sysctl', '-q', '-w', ...entries]);
}

/** Messages that mean "already gone"; removal is idempotent. */
const GONE = /No such process|Cannot find device|No such file or directory|does not exist|Cannot assign/;

/** True when every line of the failure's message says "already gone". */
export function onlyAlreadyGone(err: unknown): boolean {
  if (!(err instanceof CommandFailed)) return false;
  const real = err.stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !GONE.test(l) && !/^Command failed/.test(l));
  return real.length === 0;
}

/** For `nft -f`: true when every error it reports is "No such file or directory" (already gone). */
export function nftOnlyAlreadyGone(err: unknown): boolean {
  if (!(err instanceof CommandFailed)) return false;
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
