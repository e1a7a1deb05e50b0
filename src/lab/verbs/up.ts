// `lab up`: builds a VPC on this machine: namespaces, the emulator inside the VPC namespace, one
// instance per node namespace (its ENIs become links through the fabric), the plugin installed
// and one agent per node, each with its DaemonSet pod in the API (pod-runtime.ts: what `kubectl
// exec` into it runs). On any failure it tears down what it made and rethrows.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import type { LaunchedInstance } from '../../emulator/api.ts';
import { errorText } from '../../infra/error-text.ts';
import { type LabDescription, type LabLayout, labDescription, labLayout, NODE_SUBNET } from '../layout.ts';
import { createLabNetwork, labNetnsNames } from '../netns.ts';
import { daemonSetPod, VPCNET_DAEMONSET } from '../pod-runtime.ts';
import { assertImagePresent } from '../podman.ts';
import {
  agentContainerName,
  installPluginFromImage,
  recordAgentContainer,
} from '../processes/agent-container.ts';
import {
  agentSpec,
  installPlugin,
  logTail,
  type PodEniSettings,
  waitAgentHealthy,
} from '../processes/agents.ts';
import { type ChildSpec, ctlArgv, spawnRecorded } from '../processes/children.ts';
import { labTimeout } from '../timeouts.ts';
import { resolveTrunkDriver, type TrunkDriver } from '../trunk-driver.ts';
import { unixJson, waitForHttp200 } from '../unix-http.ts';
import { labDown } from './down.ts';

export type LabLog = (line: Record<string, unknown>) => void;

export interface LabUpOptions {
  readonly name: string;
  readonly nodes?: number;
  readonly instanceType?: string;
  readonly podEni?: boolean;
  /** With podEni: the trunk driver; when absent, 'vlan' if this kernel has 802.1q, else 'macvlan'. */
  readonly trunkDriver?: TrunkDriver;
  readonly repoRoot: string;
  readonly log: LabLog;
  /** The state dir was made by `lab up --detach` for this run (it holds the supervisor's log). */
  readonly stateDirPrepared?: boolean;
  /** Keep the state dir (logs, error file) when bringing the lab up fails. */
  readonly keepStateDirOnFailure?: boolean;
  /** Run each node's agent in this image with podman (agent-container.ts) instead of as a host process. */
  readonly agentImage?: string;
  /** A dual-stack VPC (layout.ts LAB_IPV6): IPv6 CIDRs, a primary IPv6 per node, IPv6 forwarding. */
  readonly ipv6?: boolean;
}

/** A lab that is up; its child processes are the caller's (the supervisor's) to watch. */
export interface RunningLab {
  readonly layout: LabLayout;
  readonly description: LabDescription;
  /** Set with --pod-eni: what the agents are started with. */
  readonly podEni: PodEniSettings | undefined;
  /** How the emulator's fabric carries branch ENIs on trunks. */
  readonly trunkDriver: TrunkDriver;
  /** Set with --agent-image: the agents run in this image. */
  readonly agentImage: string | undefined;
  readonly children: Map<string, { readonly spec: ChildSpec; child: ChildProcess }>;
}

// Before VPCNET_LAB_TIMEOUT_SCALE (src/lab/timeouts.ts).
const EMULATOR_READY_MS = 30_000;
const AGENT_READY_MS = 60_000;

/** Throws when any trace of lab `name` exists: its namespaces or (unless prepared) its state dir. */
export async function assertLabAbsent(name: string, stateDirPrepared = false): Promise<void> {
  const layout = labLayout(name, 0);
  const namespaces = await labNetnsNames(name);
  const traces = [
    ...(namespaces.length > 0 ? [`network namespaces ${namespaces.join(', ')}`] : []),
    ...(!stateDirPrepared && existsSync(layout.stateDir) ? [`state dir ${layout.stateDir}`] : []),
  ];
  if (traces.length > 0) {
    throw new Error(
      `lab ${name} already exists (${traces.join('; ')}); run \`vpcnetctl lab down --name ${name}\` first`,
    );
  }
}

export async function labUp(opts: LabUpOptions): Promise<RunningLab> {
  const nodeCount = opts.nodes ?? 1;
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > 32) {
    throw new Error(`--nodes must be an integer from 1 to 32, not ${nodeCount}`);
  }
  const layout = labLayout(opts.name, nodeCount, opts.ipv6 === true);
  await assertLabAbsent(opts.name, opts.stateDirPrepared === true);
  const children: RunningLab['children'] = new Map();
  try {
    const trunkDriver = await build(layout, children, opts);
    return {
      layout,
      description: labDescription(layout),
      podEni: opts.podEni === true ? { trunkDriver } : undefined,
      trunkDriver,
      agentImage: opts.agentImage,
      children,
    };
  } catch (err) {
    opts.log({ msg: 'lab up failed; tearing down', lab: opts.name, error: errorText(err) });
    await labDown(opts.name, { keepStateDir: opts.keepStateDirOnFailure === true, log: opts.log }).catch(
      (e: unknown) => opts.log({ msg: 'teardown after failed lab up failed', error: String(e) }),
    );
    throw err;
  }
}

/** Builds the lab; resolves with the trunk driver its fabric (and, with pod ENIs, its agents) use. */
async function build(
  layout: LabLayout,
  children: RunningLab['children'],
  opts: LabUpOptions,
): Promise<TrunkDriver> {
  const log = opts.log;
  // Before anything is made: a missing image is the operator's to fix, not a teardown's.
  if (opts.agentImage !== undefined) await assertImagePresent(opts.agentImage);
  await mkdir(layout.files.pidsDir, { recursive: true, mode: 0o700 });
  for (const n of layout.nodes) {
    for (const d of [n.stateDir, n.spoolDir, n.cniBinDir, n.cniConfDir]) await mkdir(d, { recursive: true });
  }
  await createLabNetwork(layout);
  log({ msg: 'network created', lab: layout.name, vpcNetns: layout.vpcNetns });
  const trunkDriver = await resolveTrunkDriver(opts.trunkDriver, layout.vpcNetns);
  log({
    msg: 'trunk driver',
    driver: trunkDriver,
    chosen: opts.trunkDriver === undefined ? 'probed' : 'asked',
  });
  // Beside the description, whose fields are a stable interface: which trunk driver this lab got.
  await writeFile(layout.files.trunkDriver, `${trunkDriver}\n`);
  const podEni = opts.podEni === true ? { trunkDriver } : undefined;

  const emulator = await startChild(
    children,
    emulatorSpec(layout, opts.repoRoot, trunkDriver, podEni !== undefined),
    layout,
  );
  await waitForHttp200(layout.emulator.adminSocket, '/admin/state', labTimeout(EMULATOR_READY_MS), () =>
    exited(emulator),
  ).catch(async (err: unknown) => {
    throw new Error(
      `emulator did not come up: ${errorText(err)}\n${await logTail(layout.files.emulatorLog)}`,
    );
  });
  log({ msg: 'emulator ready', adminSocket: layout.emulator.adminSocket });

  const hostIps = new Map<string, string>();
  for (const node of layout.nodes) {
    const instance = (await unixJson(layout.emulator.adminSocket, 'POST', '/admin/instances', {
      instanceType: opts.instanceType ?? 't3.medium',
      subnetId: NODE_SUBNET.subnetId,
      netns: node.netns,
      nodeName: node.name,
    })) as LaunchedInstance;
    hostIps.set(node.name, instance.primaryEni.primaryIp);
    log({
      msg: 'instance launched',
      node: node.name,
      instanceId: instance.instanceId,
      ip: instance.primaryEni.primaryIp,
    });
  }

  const image = opts.agentImage;
  for (const node of layout.nodes) {
    if (image === undefined) await installPlugin(node, opts.repoRoot);
    else await installPluginFromImage(node, image);
  }
  log({ msg: 'plugin installed', from: image ?? 'bin/', nodes: layout.nodes.map((n) => n.name) });
  if (image !== undefined) {
    for (const node of layout.nodes) await recordAgentContainer(layout, agentContainerName(layout, node));
  }
  const started = layout.nodes.map((node) => ({
    node,
    child: startChild(children, agentSpec(layout, node, opts.repoRoot, podEni, image), layout),
  }));
  log({ msg: image === undefined ? 'agents started' : `agents started in ${image}` });
  // As a DaemonSet's pods: the audit finds the agents through them, and `kubectl exec` reaches a
  // node's agent in them. They live in the emulator's memory, so they go with it at `lab down`.
  for (const node of layout.nodes) {
    const path = `/api/v1/namespaces/${VPCNET_DAEMONSET.namespace}/pods`;
    await unixJson(
      layout.emulator.adminSocket,
      'POST',
      path,
      daemonSetPod(node, hostIps.get(node.name) ?? ''),
    );
  }
  for (const { node, child } of started)
    await waitAgentHealthy(node, await child, labTimeout(AGENT_READY_MS));
  log({ msg: 'agents healthy', nodes: layout.nodes.map((n) => n.name) });
  return trunkDriver;
}

/** `podEni`: the agents run with ENABLE_POD_ENI, which the emulator's exec gives its commands too. */
export function emulatorSpec(
  layout: LabLayout,
  repoRoot: string,
  trunkDriver: TrunkDriver,
  podEni = false,
): ChildSpec {
  return {
    role: 'emulator',
    argv: [
      'ip',
      'netns',
      'exec',
      layout.vpcNetns,
      ...ctlArgv(repoRoot),
      'lab',
      'emulator',
      '--name',
      layout.name,
      '--trunk-driver',
      trunkDriver,
      ...(layout.vpc.ipv6Cidr === undefined ? [] : ['--ipv6']),
      ...(podEni ? ['--pod-eni'] : []),
    ],
    env: { ...process.env },
    cwd: repoRoot,
    logFile: layout.files.emulatorLog,
    cmdlineMatch: `emulator --name ${layout.name} `,
  };
}

export async function startChild(
  children: RunningLab['children'],
  spec: ChildSpec,
  layout: LabLayout,
): Promise<ChildProcess> {
  const child = await spawnRecorded(spec, layout.files.pidsDir);
  children.set(spec.role, { spec, child });
  return child;
}

function exited(child: ChildProcess): string | undefined {
  return child.exitCode !== null || child.signalCode !== null
    ? `exited (${child.exitCode ?? child.signalCode})`
    : undefined;
}
