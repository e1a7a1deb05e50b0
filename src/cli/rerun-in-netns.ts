// Runs vpcnetctl again inside a lab's network namespace, as a command that must see what a node or
// the VPC sees there (its IMDS, its EC2 and API endpoints, its /proc/sys), passing its output
// through; resolves with its exit code.
import { spawn } from 'node:child_process';
import type { CliEnv } from './cli-env.ts';

export function rerunInNetns(
  netns: string,
  args: readonly string[],
  childEnv: NodeJS.ProcessEnv,
  env: CliEnv,
): Promise<number> {
  const argv = ['netns', 'exec', netns, process.execPath, env.self, ...args];
  const child = spawn('ip', argv, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (c: Buffer) => env.out(c.toString()));
  child.stderr.on('data', (c: Buffer) => env.err(c.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}
