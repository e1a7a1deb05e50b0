// `vpcnetctl lab …`: argument parsing and output of the lab commands. The work is in the
// modules named after each command (up, down, pod, supervisor, emulator-process).
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isUsageError, UsageError, usageText } from '../cli/usage-error.ts';
import { knownInstanceTypes, networkLimits } from '../emulator/vpc/instance-types.ts';
import { errorText } from '../infra/error-text.ts';
import { type LabDescription, labLayout } from './layout.ts';
import { labUpDetached, readUpRequest } from './processes/detach.ts';
import { runEmulatorProcess } from './processes/emulator-process.ts';
import { runSupervisor } from './processes/supervisor.ts';
import { logLineStep, stderrProgress } from './progress.ts';
import { parseTrunkDriver, type TrunkDriver } from './trunk-driver.ts';
import { ChainFailed, CNI_HELP, labCniCommand } from './verbs/cni-command.ts';
import { type LabRemoved, labDown } from './verbs/down.ts';
import { ENI_HELP, labEniCommand } from './verbs/enis.ts';
import { deleteLabPod, labPod } from './verbs/pod.ts';
import { ENI_CONFIG_HELP, labEniConfigCommand, labSubnetCommand, SUBNET_HELP } from './verbs/subnets.ts';
import type { LabLog } from './verbs/up.ts';

const HELP: Record<string, string> = {
  lab: `Usage: vpcnetctl lab <command> [options]

A VPC on this machine: an emulated EC2/IMDS/Kubernetes API, node namespaces each running
a real vpcnet agent, and VPC test hosts. Needs root.

Commands:
  up          bring a lab up
  down        remove a lab (every namespace, process and file of it)
  pod         register a pod in the lab's Kubernetes API (or --delete it)
  cni         run the node's whole CNI chain for a pod (ADD, DEL, CHECK) as a runtime would
  subnet      add a subnet (zone, tags) to the lab's VPC, or set or remove a subnet's tags
  eni-config  add an ENIConfig (custom networking) to the lab's Kubernetes API
  eni         attach an ENI with addresses to a node, as an operator would (IMDS-only mode)
Run \`vpcnetctl lab <command> --help\` for its options.
`,
  up: `Usage: vpcnetctl lab up --name L [--nodes N] [--instance-type T] [--pod-eni [--trunk-driver D]]
                          [--ipv6] [--agent-image IMAGE] [--detach] [--json] [--agent-env NAME=VALUE ...]

  --name L            lab name; its network namespaces are named L-vpc, L-host1, L-node1..N
  --nodes N           number of nodes (default 1)
  --instance-type T   EC2 instance type of the nodes (default t3.medium; pod ENIs need a type
                      with trunking: ${trunkingTypes().join(', ')}); the lab knows
                      ${knownInstanceTypes().join(', ')}
  --pod-eni           pods with their own security groups: ENABLE_POD_ENI=true and
                      VPCNET_TRUNK_DRIVER on the agents; the emulated resource controller attaches
                      a trunk ENI to a node once its agent lists SecurityGroupsForPods in the
                      node's CNINode (or labels it vpc.amazonaws.com/has-trunk-attached), in the
                      ENIConfig's subnet when the CNINode lists CustomNetworking too
  --trunk-driver D    with --pod-eni: vlan (802.1q, as in production) or macvlan (for kernels
                      without 8021q); default vlan when this kernel can create VLAN devices
                      (probed inside the lab's VPC namespace), else macvlan
  --ipv6              a dual-stack VPC: IPv6 CIDR 2001:db8:5e00::/56, the node subnet
                      2001:db8:5e00::/64 (router ::1), a primary IPv6 on each node's primary ENI
                      with a default route via the router, IPv6 forwarding in the VPC and node
                      namespaces, and the VPC host at 2001:db8:5e00:ff::10. The agents stay IPv4
                      unless given --agent-env ENABLE_IPv6=true --agent-env ENABLE_PREFIX_DELEGATION=true
  --agent-image IMAGE run each node's agent in IMAGE (e.g. localhost/vpcnet:latest, made by
                      \`npm run image\`) with podman, as the DaemonSet runs it: the node's network
                      namespace, capabilities NET_ADMIN and SYS_ADMIN only, /var/run/netns mounted
                      with rslave propagation, the node's CNI, state and socket dirs at their own
                      paths; the plugin is installed from the image too. Default: agents run as
                      host processes from this checkout's bin/
  --detach            leave a supervisor running in the background and exit once the lab is ready
  --json              print the lab's description as one JSON object on stdout (and log JSON
                      lines on stderr); without it, progress lines (step, seconds) go to stderr
  --agent-env N=V     set N=V in every agent's environment (repeatable), e.g.
                      --agent-env WARM_IP_TARGET=5 --agent-env IP_COOLDOWN_PERIOD=3

Without --detach the lab runs in the foreground until Ctrl-C, which tears it down.
Pool settings (WARM_IP_TARGET, WARM_ENI_TARGET, MINIMUM_IP_TARGET, ...) in the environment
are passed to the agents. The trunk driver the lab got is in /run/vpcnet-lab/L/trunk-driver.
On a slow kernel (a software-emulated VM) VPCNET_LAB_TIMEOUT_SCALE=N makes every wait of the lab
(emulator and agent readiness, admin calls, shutdown grace) N times longer.
`,
  down: `Usage: vpcnetctl lab down --name L

Stops the lab's supervisor, emulator and agents, deletes every network namespace whose name
starts with L- and removes /run/vpcnet-lab/L, and says what it removed. Succeeds when there is
nothing to remove (and says so).
`,
  cni: CNI_HELP,
  pod: `Usage: vpcnetctl lab pod --name L --node NODE --namespace NS --pod P [--uid U] [--security-groups sg-1,sg-2]
       vpcnetctl lab pod --name L --delete --namespace NS --pod P

Registers pod NS/P bound to NODE in the lab's Kubernetes API and prints it as JSON.
With --security-groups it also plays the resource controller: the pod asks for the
vpc.amazonaws.com/pod-eni resource (as the webhook makes it), gets a branch ENI with those
groups on NODE's trunk ENI under the lowest free VLAN ID, and the printed pod carries the
vpc.amazonaws.com/pod-eni annotation. NODE needs a trunk ENI already (lab up --pod-eni and an
m5/c5 instance type; its agent asks for the trunk), else nothing is registered and it says so.
With --delete it removes pod NS/P from the Kubernetes API (the controller then releases its
branch ENI and VLAN ID); a pod that does not exist is an error.
`,
  subnet: SUBNET_HELP,
  'eni-config': ENI_CONFIG_HELP,
  eni: ENI_HELP,
  supervise: 'Usage: vpcnetctl lab supervise --name L   (internal: started by `lab up --detach`)\n',
  emulator: 'Usage: vpcnetctl lab emulator --name L   (internal: runs inside the lab VPC namespace)\n',
};

/** Instance types of the lab's EC2 with trunking (pods with their own security groups need it). */
function trunkingTypes(): string[] {
  return knownInstanceTypes().filter((t) => (networkLimits(t)?.maxBranchEnis ?? 0) > 0);
}

function stderrLog(): LabLog {
  return (line) => process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
}

/** For a person at a terminal: each log line as a progress step with the seconds since `lab up` began. */
function progressLog(): LabLog {
  const progress = stderrProgress('vpcnetctl lab up:');
  return (line) => progress(logLineStep(line));
}

/** `argv` is what follows `vpcnetctl lab` (a leading `lab` is accepted too). Resolves with the exit code. */
export async function runLabCommand(argv: readonly string[], repoRoot: string): Promise<number> {
  const args = argv[0] === 'lab' ? argv.slice(1) : [...argv];
  const command = args[0];
  // No command is a usage error: the help goes to stderr, as `vpcnetctl` alone does.
  if (command === undefined) {
    process.stderr.write(HELP.lab ?? '');
    return 2;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(HELP.lab ?? '');
    return 0;
  }
  const help = HELP[command];
  if (help === undefined || command === 'lab') {
    process.stderr.write(
      `vpcnetctl lab: unknown command ${JSON.stringify(command)}\nRun 'vpcnetctl lab --help' for the commands.\n`,
    );
    return 2;
  }
  const rest = args.slice(1);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(help);
    return 0;
  }
  try {
    return await dispatch(command, rest, repoRoot);
  } catch (err) {
    if (isUsageError(err)) {
      process.stderr.write(usageText(`vpcnetctl lab ${command}`, err));
      return 2;
    }
    process.stderr.write(
      `vpcnetctl lab ${command}: ${err instanceof ChainFailed ? err.message : errorText(err)}\n`,
    );
    return 1;
  }
}

async function dispatch(command: string, args: string[], repoRoot: string): Promise<number> {
  switch (command) {
    case 'up':
      return up(args, repoRoot);
    case 'down': {
      const name = requiredName(parseArgs({ args, options: { name: { type: 'string' } } }).values.name);
      process.stdout.write(`${removedText(name, await labDown(name))}\n`);
      return 0;
    }
    case 'cni':
      return labCniCommand(args, (s) => process.stdout.write(s));
    case 'pod':
      return pod(args);
    case 'subnet':
      return labSubnetCommand(args);
    case 'eni-config':
      return labEniConfigCommand(args);
    case 'eni':
      return labEniCommand(args);
    case 'supervise': {
      const name = requiredName(parseArgs({ args, options: { name: { type: 'string' } } }).values.name);
      const req = await readUpRequest(name);
      return runSupervisor({
        name,
        nodes: req.nodes,
        instanceType: req.instanceType,
        podEni: req.podEni,
        ...(req.ipv6 === true ? { ipv6: true } : {}),
        ...(req.trunkDriver === undefined ? {} : { trunkDriver: req.trunkDriver }),
        ...(req.agentImage === undefined ? {} : { agentImage: req.agentImage }),
        repoRoot,
        log: stderrLog(),
        stateDirPrepared: true,
        keepStateDirOnFailure: true,
      });
    }
    case 'emulator': {
      const { values } = parseArgs({
        args,
        options: {
          name: { type: 'string' },
          'trunk-driver': { type: 'string' },
          ipv6: { type: 'boolean' },
          'pod-eni': { type: 'boolean' },
        },
      });
      return runEmulatorProcess(
        requiredName(values.name),
        parseTrunkDriver(values['trunk-driver'] ?? 'vlan'),
        repoRoot,
        values.ipv6 === true,
        values['pod-eni'] === true,
      );
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

async function up(args: string[], repoRoot: string): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      nodes: { type: 'string' },
      'instance-type': { type: 'string' },
      'pod-eni': { type: 'boolean' },
      'trunk-driver': { type: 'string' },
      ipv6: { type: 'boolean' },
      detach: { type: 'boolean' },
      json: { type: 'boolean' },
      'agent-env': { type: 'string', multiple: true },
      'agent-image': { type: 'string' },
    },
  });
  const agentImage = values['agent-image'];
  if (agentImage === '') throw new UsageError('--agent-image needs an image name');
  const nodes = values.nodes === undefined ? 1 : Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 32) {
    throw new UsageError(`--nodes must be an integer from 1 to 32, not ${values.nodes}`);
  }
  // Agents inherit this process's environment (see agentEnv), also through a detached supervisor.
  for (const pair of values['agent-env'] ?? []) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(pair); // ENABLE_IPv6 has a lower-case v
    if (!m) throw new UsageError(`--agent-env takes NAME=VALUE, not ${JSON.stringify(pair)}`);
    process.env[m[1]!] = m[2]!;
  }
  const driverText = values['trunk-driver'];
  if (driverText !== undefined && values['pod-eni'] !== true) {
    throw new UsageError('--trunk-driver is for pods with their own security groups: add --pod-eni');
  }
  let trunkDriver: TrunkDriver | undefined;
  try {
    trunkDriver = driverText === undefined ? undefined : parseTrunkDriver(driverText);
  } catch (err) {
    throw new UsageError(errorText(err));
  }
  const instanceType = values['instance-type'] ?? 't3.medium';
  checkInstanceType(instanceType, values['pod-eni'] === true);
  const opts = {
    name: requiredName(values.name),
    nodes,
    instanceType,
    podEni: values['pod-eni'] === true,
    ...(values.ipv6 === true ? { ipv6: true } : {}),
    ...(trunkDriver === undefined ? {} : { trunkDriver }),
    ...(agentImage === undefined ? {} : { agentImage }),
    repoRoot,
  };
  const print = (d: LabDescription): void => {
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify(d)}\n`);
      return;
    }
    const driverFile = labLayout(d.name, 0).files.trunkDriver;
    const driver = existsSync(driverFile) ? readFileSync(driverFile, 'utf8').trim() : 'unknown';
    const podEni = opts.podEni
      ? `pod ENIs on, trunk driver ${driver}`
      : `pod ENIs off (fabric trunk driver ${driver})`;
    process.stdout.write(describe(d, values.detach === true, podEni));
  };
  if (values.detach === true) {
    print(await labUpDetached(opts, values.json === true ? undefined : progressLog()));
    return 0;
  }
  return runSupervisor({ ...opts, log: values.json === true ? stderrLog() : progressLog(), onReady: print });
}

async function pod(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      node: { type: 'string' },
      namespace: { type: 'string' },
      pod: { type: 'string' },
      uid: { type: 'string' },
      'security-groups': { type: 'string' },
      delete: { type: 'boolean' },
    },
  });
  const required =
    values.delete === true ? (['namespace', 'pod'] as const) : (['node', 'namespace', 'pod'] as const);
  for (const key of required) {
    if (values[key] === undefined || values[key] === '') throw new UsageError(`--${key} is required`);
  }
  const name = requiredName(values.name);
  if (values.delete === true) {
    for (const key of ['node', 'uid', 'security-groups'] as const) {
      if (values[key] !== undefined) throw new UsageError(`--${key} does not go with --delete`);
    }
    await deleteLabPod({ name, namespace: values.namespace ?? '', pod: values.pod ?? '' });
    process.stdout.write(`pod ${values.namespace}/${values.pod} deleted\n`);
    return 0;
  }
  const created = await labPod({
    name,
    node: values.node ?? '',
    namespace: values.namespace ?? '',
    pod: values.pod ?? '',
    ...(values.uid === undefined ? {} : { uid: values.uid }),
    ...(values['security-groups'] === undefined
      ? {}
      : { securityGroups: values['security-groups'].split(',').filter((s) => s !== '') }),
  });
  process.stdout.write(`${JSON.stringify(created)}\n`);
  return 0;
}

/** The lab's EC2 launches only types it knows; pod ENIs need one with trunking. */
function checkInstanceType(instanceType: string, podEni: boolean): void {
  const limits = networkLimits(instanceType);
  if (limits === undefined) {
    throw new UsageError(
      `the lab has no instance type ${JSON.stringify(instanceType)}; it knows ${knownInstanceTypes().join(', ')}`,
    );
  }
  if (podEni && limits.maxBranchEnis === 0) {
    throw new UsageError(
      `${instanceType} has no trunking, which --pod-eni needs (a trunk ENI carries the pods' branch ENIs); types with trunking: ${trunkingTypes().join(', ')}`,
    );
  }
}

/** What `lab down` says it did. */
function removedText(name: string, removed: LabRemoved): string {
  const parts = [
    removed.processes > 0 ? `${removed.processes} process(es) stopped` : '',
    removed.namespaces.length > 0 ? `${removed.namespaces.length} network namespace(s) deleted` : '',
    removed.stateDir ? `${removed.stateDir} removed` : '',
  ].filter((p) => p !== '');
  return parts.length === 0 ? `lab ${name}: nothing to remove` : `lab ${name} removed: ${parts.join(', ')}`;
}

function requiredName(name: string | undefined): string {
  if (name === undefined || name === '') throw new UsageError('--name is required');
  return name;
}

function describe(d: LabDescription, detached: boolean, podEni: string): string {
  const lines = [
    `lab ${d.name} is up${detached ? '' : ' (Ctrl-C tears it down)'}`,
    `  VPC namespace: ${d.vpcNetns}; ${podEni}`,
    ...d.nodes.map(
      (n) => `  ${n.name}: netns ${n.netns}, agent ${n.agentSocket}, CNI ${n.cniBinDir} ${n.cniConfDir}`,
    ),
    ...d.vpcHosts.map(
      (h) => `  VPC host: netns ${h.netns}, ${h.ip}${h.ipv6 === undefined ? '' : `, ${h.ipv6}`}`,
    ),
    `  EC2 ${d.emulator.ec2Endpoint}, IMDS ${d.emulator.imdsEndpoint}, kube API ${d.emulator.kubeEndpoint}`,
    detached ? `  remove it with: vpcnetctl lab down --name ${d.name}` : '',
  ];
  return `${lines.filter((l) => l !== '').join('\n')}\n`;
}
