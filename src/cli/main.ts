// vpcnetctl: the operator's CLI. Subcommands dispatch to their modules; each has --help.
import { dirname, join } from 'node:path';
import { VPCNET_VERSION } from '../infra/version.ts';
import type { CliEnv } from './cli-env.ts';
import { runInstallCommand } from './install/install.ts';
import { runHealthCommand } from './node/health.ts';
import { runStateCommand } from './node/state.ts';
import { EXIT_USAGE } from './output.ts';
import { isUsageError, usageText } from './usage-error.ts';

export const MAIN_HELP = `Usage: vpcnetctl <command> [options]

Commands on a node (or a lab's node with --lab NAME [--node N]):
  status          the node at a glance: pool, ENIs and their addresses, trunk and branch ENIs,
                  attachments, warnings; exit code 0 healthy, 1 degraded, 3 down
  pods            one row per pod interface: pod, container, address, ENI, host veth, phase, age
  explain NS/POD  why a pod has (no) network: its record, each resource checked against the
                  kernel, its ENI in EC2, its recent errors
  state           print the agent's state (attachments, pool) as JSON
  health          the DaemonSet's probes (readiness; --live for liveness): quiet, exit 0 or 3
  support-bundle  one .tar.gz with state, ledger, ip/nft dumps, CNI config and logs, for a bug report
  doctor          preflight of the node: EC2 permissions (DryRun), IMDS, endpoints, subnets,
                  ENIConfig, kubelet maxPods, rp_filter, network managers, kube-proxy, 8021q, ...;
                  each finding with its fix (also the DaemonSet's init step: --init)
  install         install the CNI plugin and conflist (what the DaemonSet init step does)

Cluster-wide (also 'kubectl vpcnet ...', or a lab's with --lab NAME):
  audit           read-only: ledgers, pods and EC2 compared (addresses no one owns, records of
                  gone pods, an address on two nodes, detached ENIs, ...), per subnet free
                  addresses and /28s; --repair for what the ledgers prove safe

A lab (a VPC on this machine, see 'vpcnetctl lab --help'):
  lab up | down   bring a lab up, remove it
  lab pod         register a pod in the lab's Kubernetes API (or --delete it)
  lab cni         run the node's whole CNI chain for a pod (ADD, DEL, CHECK) as a runtime would
  lab subnet      add a subnet, or set or remove a subnet's tags
  lab eni-config  add an ENIConfig (custom networking)
  lab eni         attach an ENI with addresses to a node, as an operator would
  demo            a one-node lab with three pods, a live table, the agent's log in a named file;
                  Ctrl-C tears it down (npm start)

Status-like commands take --json (one JSON document for scripts); colour only on a terminal
without NO_COLOR. Exit code 2 is always a usage error. 'vpcnetctl --version' prints the version.
Run 'vpcnetctl <command> --help' for a command's options.
`;

/** Runs one command line; a usage error is one line and exit 2, whichever command it came from. */
export async function runCli(argv: string[], env: CliEnv): Promise<number> {
  try {
    return await dispatch(argv, env);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    env.err(usageText(`vpcnetctl ${argv[0] ?? ''}`.trimEnd(), err));
    return EXIT_USAGE;
  }
}

async function dispatch(argv: string[], env: CliEnv): Promise<number> {
  const [command, ...rest] = argv;
  const repoRoot = dirname(env.binDir);
  switch (command) {
    // The probe runs every few seconds on every node: loaded eagerly, it loads little.
    case 'health':
      return runHealthCommand(rest, env.out, env.err, env.env);
    case 'status': {
      const { runStatusCommand } = await import('./node/status.ts');
      return runStatusCommand(rest, env);
    }
    case 'pods': {
      const { runPodsCommand } = await import('./node/pods.ts');
      return runPodsCommand(rest, env);
    }
    case 'explain': {
      const { runExplainCommand } = await import('./node/explain.ts');
      return runExplainCommand(rest, env);
    }
    case 'support-bundle': {
      const { runSupportBundleCommand } = await import('./bundle/support-bundle.ts');
      return runSupportBundleCommand(rest, env);
    }
    case 'audit': {
      const { runAuditCommand } = await import('./audit/command.ts');
      return runAuditCommand(rest, env);
    }
    case 'doctor': {
      const { runDoctorCommand } = await import('./doctor/command.ts');
      return runDoctorCommand(rest, env);
    }
    case 'install':
      return runInstallCommand(rest, join(env.binDir, 'vpcnet'), env.out, env.env);
    case 'state':
      return runStateCommand(rest, env);
    case 'lab': {
      const { runLabCommand } = await import('../lab/cli-lab.ts');
      return runLabCommand(rest, repoRoot);
    }
    case 'demo': {
      const { runDemo } = await import('./demo.ts');
      return runDemo(rest, repoRoot, env.out, env.stdoutIsTty);
    }
    case '--version':
    case 'version':
      env.out(`vpcnetctl ${VPCNET_VERSION}\n`);
      return 0;
    case undefined:
      env.err(MAIN_HELP);
      return EXIT_USAGE;
    case '-h':
    case '--help':
    case 'help':
      env.out(MAIN_HELP);
      return 0;
    default:
      env.err(`vpcnetctl: unknown command '${command}'\nRun 'vpcnetctl --help' for the commands.\n`);
      return EXIT_USAGE;
  }
}
