// vpcnetctl: the operator's CLI. Subcommands dispatch to their modules; each has --help.
import { dirname, join } from 'node:path';
import type { CliEnv } from './cli-env.ts';
import { runHealthCommand } from './health.ts';
import { runInstallCommand } from './install.ts';
import { EXIT_USAGE } from './output.ts';
import { runStateCommand } from './state.ts';

export const MAIN_HELP = `Usage: vpcnetctl <command> [options]

Commands:
  status          the node at a glance: pool, ENIs and their addresses, attachments, warnings;
                  exit code 0 healthy, 1 degraded, 3 down
  pods            one row per pod interface: pod, container, address, ENI, host veth, phase, age
  explain NS/POD  why a pod has (no) network: its record, each resource checked against the
                  kernel, its ENI in EC2, its recent errors
  support-bundle  one .tar.gz with state, ledger, ip/nft dumps, CNI config and logs, for a bug report
  health          the DaemonSet's probes (readiness; --live for liveness): quiet, exit 0 or 3
  install         install the CNI plugin and conflist (what the DaemonSet init step does)
  state           print the agent's state (attachments, pool) as JSON
  lab             a VPC on one machine: lab up | down | pod (see 'vpcnetctl lab --help')
  demo            bring up a one-node lab, start three pods, show their VPC addresses and
                  live reachability, serve until Ctrl-C, then tear everything down (npm start)

Status-like commands take --json (one JSON document for scripts); colour only on a terminal
without NO_COLOR. Run 'vpcnetctl <command> --help' for a command's options.
`;

/** A command's options that do not parse are a usage error (exit 2), not a failure. */
function isUsageError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

export async function runCli(argv: string[], env: CliEnv): Promise<number> {
  try {
    return await dispatch(argv, env);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    env.err(`vpcnetctl ${argv[0] ?? ''}: ${(err as Error).message}\n`);
    return EXIT_USAGE;
  }
}

async function dispatch(argv: string[], env: CliEnv): Promise<number> {
  const [command, ...rest] = argv;
  const repoRoot = dirname(env.binDir);
  switch (command) {
    // The probe runs every few seconds on every node: loaded eagerly, it loads little.
    case 'health':
      return runHealthCommand(rest, env.out, env.err);
    case 'status': {
      const { runStatusCommand } = await import('./status.ts');
      return runStatusCommand(rest, env);
    }
    case 'pods': {
      const { runPodsCommand } = await import('./pods.ts');
      return runPodsCommand(rest, env);
    }
    case 'explain': {
      const { runExplainCommand } = await import('./explain.ts');
      return runExplainCommand(rest, env);
    }
    case 'support-bundle': {
      const { runSupportBundleCommand } = await import('./support-bundle.ts');
      return runSupportBundleCommand(rest, env);
    }
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
