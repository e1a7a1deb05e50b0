// One vpcnet agent per lab node, started inside the node's namespace and configured by its
// environment (src/config/settings.ts) to use the emulator as its cloud and kube API.

import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AGENT_NODE_FLAGS } from '../config/agent-node-flags.ts';
import { AGENT_SETTINGS } from '../config/settings.ts';
import { errorText } from '../infra/error-text.ts';
import { containerAgentSpec, installArgs } from './agent-container.ts';
import type { ChildSpec } from './children.ts';
import { ctlArgv } from './children.ts';
import { runCommand } from './command.ts';
import type { LabLayout, LabNode } from './layout.ts';
import type { TrunkDriver } from './trunk-driver.ts';
import { waitForHttp200 } from './unix-http.ts';

export function agentRole(node: LabNode): string {
  return `agent-${node.name}`;
}

/** Pods with their own security groups: the agents' ENABLE_POD_ENI, and the trunk driver they use. */
export interface PodEniSettings {
  readonly trunkDriver: TrunkDriver;
}

/** The agent's settings by name (not the cloud driver's variables, which the lab sets itself). */
const AGENT_SETTING_NAMES = new Set(Object.values(AGENT_SETTINGS).map((setting) => setting.env));

/** The agent's environment: the caller's (pool targets such as WARM_IP_TARGET pass through) minus
 * anything that would point it at real AWS or a real cluster, plus the lab's endpoints. The
 * upstream's own settings (AWS_VPC_K8S_CNI_*, e.g. EXTERNALSNAT, AWS_VPC_CNI_NODE_PORT_SUPPORT,
 * AWS_VPC_ENI_MTU, AWS_EXTERNAL_SERVICE_CIDRS) are vpcnet settings: they pass. */
export function agentEnv(
  layout: LabLayout,
  node: LabNode,
  podEni: PodEniSettings | undefined,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    const awsAccess = k.startsWith('AWS_') && !AGENT_SETTING_NAMES.has(k);
    if (awsAccess || k.startsWith('KUBERNETES_')) continue;
    env[k] = v;
  }
  return {
    ...env,
    VPCNET_AGENT_SOCKET: node.agentSocket,
    VPCNET_STATE_DIR: node.stateDir,
    VPCNET_DEL_SPOOL_DIR: node.spoolDir,
    VPCNET_NODE_NAME: node.name,
    VPCNET_AWS_NODE_CHECKPOINT: node.awsNodeCheckpoint,
    VPCNET_KUBE_API: layout.emulator.kubeEndpoint,
    AWS_ENDPOINT_URL_EC2: layout.emulator.ec2Endpoint,
    // The emulator answers STS and IAM on the same endpoint (what a preflight check asks them).
    AWS_ENDPOINT_URL_STS: layout.emulator.ec2Endpoint,
    AWS_ENDPOINT_URL_IAM: layout.emulator.ec2Endpoint,
    AWS_EC2_METADATA_SERVICE_ENDPOINT: layout.emulator.imdsEndpoint,
    AWS_REGION: layout.vpc.region,
    AWS_ACCESS_KEY_ID: 'lab',
    AWS_SECRET_ACCESS_KEY: 'lab',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...(podEni === undefined ? {} : { ENABLE_POD_ENI: 'true', VPCNET_TRUNK_DRIVER: podEni.trunkDriver }),
  };
}

/**
 * How the node's agent runs: this checkout's bin/vpcnetd as a host process (the default), or, with
 * `agentImage`, the image's agent in a podman container (agent-container.ts).
 */
export function agentSpec(
  layout: LabLayout,
  node: LabNode,
  repoRoot: string,
  podEni: PodEniSettings | undefined,
  agentImage?: string,
): ChildSpec {
  if (agentImage !== undefined) {
    return containerAgentSpec(layout, node, agentImage, agentEnv(layout, node, podEni), agentRole(node));
  }
  const agent = join(repoRoot, 'bin', 'vpcnetd');
  return {
    role: agentRole(node),
    // nsenter, not `ip netns exec`: the agent enters pod namespaces by path, and `ip netns exec`
    // would give it a private mount namespace in which netns files that a runtime mounts later
    // (containerd under its state dir) are empty files. A DaemonSet's agent likewise shares the
    // host's mounts (HostToContainer propagation) while it has the host's network.
    argv: ['nsenter', `--net=/var/run/netns/${node.netns}`, process.execPath, ...AGENT_NODE_FLAGS, agent],
    env: agentEnv(layout, node, podEni),
    cwd: repoRoot,
    logFile: node.agentLog,
    cmdlineMatch: agent,
  };
}

/**
 * Installs the plugin and its conflist into the node's CNI dirs, as the DaemonSet's init step would:
 * in the node's network namespace (the init step runs with the host network), so the node sysctls
 * install sets from its environment (ENABLE_IPv6, ENABLE_V6_EGRESS, DISABLE_TCP_EARLY_DEMUX, which
 * `lab up --agent-env` puts there too) land in the lab node, never in the machine's own namespace.
 */
export async function installPlugin(node: LabNode, repoRoot: string): Promise<void> {
  const [file, ...args] = ctlArgv(repoRoot);
  await runCommand('ip', ['netns', 'exec', node.netns, file, ...args, ...installArgs(node)]);
}

/** Waits for `GET /v1/healthz` = 200; the error quotes the end of the agent's log. */
export async function waitAgentHealthy(node: LabNode, child: ChildProcess, timeoutMs: number): Promise<void> {
  try {
    await waitForHttp200(node.agentSocket, '/v1/healthz', timeoutMs, () =>
      child.exitCode !== null || child.signalCode !== null
        ? `agent of ${node.name} exited (${child.exitCode ?? child.signalCode})`
        : undefined,
    );
  } catch (err) {
    const reason = errorText(err);
    throw new Error(
      `agent of ${node.name} did not become healthy: ${reason}\n${await logTail(node.agentLog)}`,
    );
  }
}

export async function logTail(file: string, lines = 20): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const tail = text.trimEnd().split('\n').slice(-lines).join('\n');
  return tail === '' ? `(${file} is empty)` : `last lines of ${file}:\n${tail}`;
}
