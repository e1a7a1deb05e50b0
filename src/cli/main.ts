// vpcnetctl: the operator's CLI. Subcommands dispatch to their modules; each has --help.
import { dirname, join, resolve } from 'node:path';
import { runInstallCommand } from './install.ts';
import { runStateCommand } from './state.ts';

export const MAIN_HELP = `Usage: vpcnetctl <command> [options]

Commands:
  install   install the CNI plugin and conflist (what the DaemonSet init step does)
  state     print the agent's state (attachments, pool) as JSON
  lab       a VPC on one machine: lab up | down | pod (see 'vpcnetctl lab --help')
  demo      bring up a one-node lab, start three pods, show their VPC addresses and
            live reachability, serve until Ctrl-C, then tear everything down (npm start)

Run 'vpcnetctl <command> --help' for a command's options.
`;

export interface CliEnv {
  /** Directory holding the built executables (bin/). */
  readonly binDir: string;
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  /** The process environment (install reads ENABLE_BANDWIDTH_PLUGIN from it). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

export function defaultCliEnv(): CliEnv {
  const binDir = dirname(resolve(process.argv[1] ?? join(process.cwd(), 'bin', 'vpcnetctl')));
  return {
    binDir,
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    env: process.env,
  };
}

export async function runCli(argv: string[], env: CliEnv): Promise<number> {
  const [command, ...rest] = argv;
  const repoRoot = dirname(env.binDir);
  switch (command) {
    case 'install':
      return runInstallCommand(rest, join(env.binDir, 'vpcnet'), env.out, env.env);
    case 'state':
      return runStateCommand(rest, env.out);
    case 'lab': {
      const { runLabCommand } = await import('../lab/cli-lab.ts');
      return runLabCommand(rest, repoRoot);
    }
    case 'demo': {
      const { runDemo } = await import('./demo.ts');
      return runDemo(rest, repoRoot, env.out);
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      env.out(MAIN_HELP);
      return command === undefined ? 2 : 0;
    default:
      env.err(`vpcnetctl: unknown command '${command}'\n\n${MAIN_HELP}`);
      return 2;
  }
}
