// A lab for namespace suites, driven only through the stable interfaces (README: the lab, the plugin, the agent socket): the built
// vpcnetctl, the installed plugin exec'd in the node's namespace as a runtime would, and the
// agent's socket. Every suite gets its own lab name and removes the lab in `after`, also on failure.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Ec2ActionCount, mutatingCalls } from '../src/emulator/ec2/call-counts.ts';
import { cidrContains, parseCidr, parseIpv4 } from '../src/infra/ipv4.ts';
import { runProcess, runToSuccess } from '../src/infra/process.ts';
import { getJson } from '../src/infra/unix-socket-json.ts';
import {
  type CniCall,
  type CniCommand,
  execPlugin,
  type PluginOutput,
  readConfList,
  runChain,
} from '../src/lab/cni-runtime.ts';
import { labLayout } from '../src/lab/layout.ts';
import { isRecordedProcessAlive, readRecords } from '../src/lab/processes/processes.ts';
import { labTimeout } from '../src/lab/timeouts.ts';
import { unixJson } from '../src/lab/unix-http.ts';
import { deleteLabPod, labPod } from '../src/lab/verbs/pod.ts';

export const repoRoot = resolve(import.meta.dirname, '..');
const ctlPath = join(repoRoot, 'bin', 'vpcnetctl');

export interface LabNodeDesc {
  name: string;
  netns: string;
  agentSocket: string;
  cniBinDir: string;
  cniConfDir: string;
}
export interface LabDesc {
  name: string;
  vpcNetns: string;
  nodes: LabNodeDesc[];
  /** `ipv6`: set in a dual-stack lab (`lab up --ipv6`). */
  vpcHosts: { netns: string; ip: string; ipv6?: string }[];
  emulator: { ec2Endpoint: string; imdsEndpoint: string; kubeEndpoint: string };
}

export function uniqueLabName(prefix: string): string {
  return `${prefix}${randomBytes(3).toString('hex')}`;
}

export async function ctl(args: string[]): Promise<string> {
  return (await runToSuccess([process.execPath, ctlPath, ...args])).stdout;
}

/** vpcnetctl whatever its exit code (status answers 1 for a degraded node): code and output. */
export async function ctlAnyExit(args: string[]): Promise<{ code: number; stdout: string }> {
  return runProcess([process.execPath, ctlPath, ...args]);
}

export async function labUp(name: string, extra: string[] = []): Promise<LabDesc> {
  return JSON.parse(await ctl(['lab', 'up', '--name', name, '--detach', '--json', ...extra])) as LabDesc;
}

/**
 * Registers a pod bound to `node` in the lab's Kubernetes API: what `vpcnetctl lab pod` does, called
 * in this process (test/lab/lab.test.ts drives the command itself), since a process per pod is slow
 * under User-Mode Linux.
 */
export async function registerPod(
  lab: string,
  node: string,
  namespace: string,
  pod: string,
  uid: string,
): Promise<void> {
  await labPod({ name: lab, node, namespace, pod, uid });
}

/** Removes a pod from the lab's Kubernetes API (`vpcnetctl lab pod --delete`, in this process); the
 * resource controller has released its branch ENI when this returns. */
export async function dropPod(lab: string, namespace: string, pod: string): Promise<void> {
  await deleteLabPod({ name: lab, namespace, pod });
}

/** The branch ENI the lab's resource controller gave a pod (its `vpc.amazonaws.com/pod-eni` annotation). */
export interface PodBranchEni {
  readonly eniId: string;
  readonly ip: string;
  readonly vlanId: number;
  readonly mac: string;
  readonly subnetCidr: string;
}

/**
 * Registers a pod with its own security groups (a lab started with `--pod-eni`): the resource
 * controller gives it a branch ENI before the call returns and annotates the pod with it.
 */
export async function registerSgPod(
  lab: string,
  node: string,
  namespace: string,
  pod: string,
  uid: string,
): Promise<PodBranchEni> {
  const registered = (await labPod({
    name: lab,
    node,
    namespace,
    pod,
    uid,
    securityGroups: ['sg-0a1b2c3d'],
  })) as {
    metadata: { annotations: Record<string, string> };
  };
  const [eni] = JSON.parse(registered.metadata.annotations['vpc.amazonaws.com/pod-eni'] ?? '[]') as {
    eniId: string;
    privateIp: string;
    vlanId: number;
    ifAddress: string;
    subnetCidr: string;
  }[];
  if (!eni) throw new Error(`the resource controller did not annotate pod ${namespace}/${pod}`);
  return {
    eniId: eni.eniId,
    ip: eni.privateIp,
    vlanId: eni.vlanId,
    mac: eni.ifAddress,
    subnetCidr: eni.subnetCidr,
  };
}

/** An ENI as the lab emulator's admin state shows it. */
export interface EmulatedEni {
  readonly eniId: string;
  /** `interface`, `trunk` or `branch`. */
  readonly interfaceType: string;
  readonly subnetId: string;
  readonly securityGroupIds: string[];
  readonly trunkAssociation: { readonly trunkEniId: string; readonly vlanId: number } | null;
  /** Lower case, as the node's link shows it. */
  readonly mac: string;
  readonly secondaryIps: string[];
  readonly ipv4Prefixes: string[];
  readonly ipv6Addresses: string[];
  readonly ipv6Prefixes: string[];
  readonly attachment: { readonly instanceId: string; readonly deviceIndex: number } | null;
}

/** The lab emulator's admin state: its instances and ENIs. */
export async function emulatorState(lab: string): Promise<{
  readonly instances: { readonly instanceId: string; readonly subnetId: string }[];
  readonly enis: EmulatedEni[];
}> {
  return (await unixJson(labLayout(lab, 0).emulator.adminSocket, 'GET', '/admin/state')) as {
    instances: { instanceId: string; subnetId: string }[];
    enis: EmulatedEni[];
  };
}

/** The ENIs attached to an instance (the lab's nodes'). */
export async function attachedEnis(lab: string): Promise<EmulatedEni[]> {
  return (await emulatorState(lab)).enis.filter((e) => e.attachment !== null);
}

/** Whether `ip` lies in one of the ENIs' delegated IPv4 /28 prefixes. */
export function inIpv4Prefixes(ip: string, enis: readonly EmulatedEni[]): boolean {
  return enis.some((e) => e.ipv4Prefixes.some((p) => cidrContains(parseCidr(p), parseIpv4(ip))));
}

/** Waits until the resource controller has attached the node's trunk ENI (its label turns true). */
export async function waitForTrunk(lab: string, node: string): Promise<void> {
  const adminSocket = labLayout(lab, 0).emulator.adminSocket;
  await waitFor(`node ${node} labelled has-trunk-attached=true`, async () => {
    const n = (await unixJson(adminSocket, 'GET', `/api/v1/nodes/${node}`)) as {
      metadata: { labels?: Record<string, string> };
    };
    return n.metadata.labels?.['vpc.amazonaws.com/has-trunk-attached'] === 'true' ? true : undefined;
  });
}

export async function labDown(name: string): Promise<void> {
  await ctl(['lab', 'down', '--name', name]);
}

/** Removes the test pods' namespaces (after a test: one already gone is no error). */
export async function deletePodNetns(pods: Iterable<{ readonly netnsName: string }>): Promise<void> {
  for (const pod of pods) await sh(['ip', 'netns', 'del', pod.netnsName]).catch(() => undefined);
}

/** Runs argv (no shell, despite the name) and returns its stdout; a failure names the command and its stderr. */
export async function sh(argv: string[]): Promise<string> {
  return (await runToSuccess(argv)).stdout;
}

/** The node's primary IPv4 address: the one on the link of its default route. */
export async function nodePrimaryIpv4(node: LabNodeDesc): Promise<string> {
  const out = await sh(['ip', '-n', node.netns, '-j', '-4', 'route', 'show', 'default']);
  const dev = (JSON.parse(out) as { dev: string }[])[0]!.dev;
  const addrs = JSON.parse(await sh(['ip', '-n', node.netns, '-j', '-4', 'addr', 'show', 'dev', dev])) as {
    addr_info: { local: string }[];
  }[];
  return addrs[0]!.addr_info[0]!.local;
}

export async function reaches(fromNetns: string, ip: string): Promise<boolean> {
  return (await runProcess(['ip', 'netns', 'exec', fromNetns, 'ping', '-c', '1', '-W', '2', ip])).code === 0;
}

export interface TestPod {
  readonly netnsName: string;
  readonly netnsPath: string;
  readonly containerId: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

export function podArgs(pod: TestPod): Record<string, string> {
  return {
    K8S_POD_NAMESPACE: pod.namespace,
    K8S_POD_NAME: pod.name,
    ...(pod.uid ? { K8S_POD_UID: pod.uid } : {}),
    K8S_POD_INFRA_CONTAINER_ID: pod.containerId,
  };
}

/** A runtime's call of `command` for `pod`'s eth0 on `node`. */
export function podCall(node: LabNodeDesc, command: CniCommand, pod: TestPod): CniCall {
  return {
    nodeNetns: node.netns,
    cniBinDir: node.cniBinDir,
    command,
    containerId: pod.containerId,
    netns: pod.netnsPath,
    ifName: 'eth0',
    args: podArgs(pod),
  };
}

/** Runs one plugin command for `pod` through the node's installed conflist, as a runtime would. */
export async function cni(
  node: LabNodeDesc,
  command: CniCommand,
  pod: TestPod,
  prevResult?: unknown,
): Promise<PluginOutput> {
  const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
  const plugin = list.plugins[0]!;
  const conf: Record<string, unknown> = { ...plugin, cniVersion: list.cniVersion, name: list.name };
  if (prevResult !== undefined) conf.prevResult = prevResult;
  return execPlugin(podCall(node, command, pod), plugin.type as string, JSON.stringify(conf));
}

/** ADD through the whole chain; returns the pod's VPC address. */
export async function addPod(node: LabNodeDesc, pod: TestPod): Promise<{ ip: string; result: unknown }> {
  const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
  const result = (await runChain(podCall(node, 'ADD', pod), list)) as { ips: { address: string }[] };
  return { ip: result.ips[0]!.address.split('/')[0]!, result };
}

export async function newPod(
  lab: string,
  short: string,
  opts: { name?: string; uid?: string } = {},
): Promise<TestPod> {
  const netnsName = `${lab}-${short}`;
  await sh(['ip', 'netns', 'add', netnsName]);
  return {
    netnsName,
    netnsPath: `/var/run/netns/${netnsName}`,
    containerId: `${short}${randomBytes(8).toString('hex')}`,
    namespace: 'default',
    name: opts.name ?? short,
    ...(opts.uid ? { uid: opts.uid } : {}),
  };
}

export interface AgentState {
  pid: number;
  attachments: { keyString: string; ip: string; hostVeth: string; key: { containerId: string } }[];
  cooling: { ip: string; freedAt: number }[];
  pool: {
    stats: { total: number; assigned: number; cooling: number; available: number };
    enis: { eniId: string; deviceNumber: number; subnetId: string }[];
    /** Why the pool cannot grow, if it cannot. */
    growth: { blocked: string | null };
    /** Subnet discovery: the subnets whose ENIs drain (and why), and those ENIs. */
    drain?: { subnets: Record<string, string>; enis: string[] };
  };
}

/** Whether IPv4 address `ip` lies in `cidr`. */
export function inCidr(ip: string, cidr: string): boolean {
  return cidrContains(parseCidr(cidr), parseIpv4(ip));
}

export async function agentState(node: LabNodeDesc): Promise<AgentState> {
  const { status, body } = await getJson(node.agentSocket, '/v1/state');
  if (status !== 200) throw new Error(`agent state: HTTP ${status}`);
  return body as AgentState;
}

export async function hostLinks(node: LabNodeDesc): Promise<string[]> {
  const out = JSON.parse(await sh(['ip', '-n', node.netns, '-j', 'link', 'show'])) as { ifname: string }[];
  return out.map((l) => l.ifname);
}

/** Probes until `probe` answers; the wait stretches with the lab's timeout scale (a slow kernel). */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  waitMs = 20000,
): Promise<T> {
  const timeoutMs = labTimeout(waitMs);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits until no agent of the lab has changed anything in EC2 for `quietMs` (the emulator's call
 * counts, at `adminSocket`): agents just started still top up their pools, at the turns the fleet's
 * pace draws, and a test that counts EC2 calls (the audit's budget, the doctor's "no mutating
 * call") must not count theirs.
 */
export async function waitForQuietEc2(adminSocket: string, quietMs = 4000): Promise<void> {
  const mutating = async () => {
    const { ec2Calls } = (await unixJson(adminSocket, 'GET', '/admin/state')) as {
      ec2Calls: Record<string, Ec2ActionCount>;
    };
    return mutatingCalls(ec2Calls);
  };
  let seen = await mutating();
  let since = Date.now();
  await waitFor(
    `${quietMs} ms without a mutating EC2 call of the agents`,
    async () => {
      const now = await mutating();
      if (now !== seen) [seen, since] = [now, Date.now()];
      return Date.now() - since >= quietMs ? true : undefined;
    },
    60_000,
  );
}

/**
 * Waits until the agent log names `id` in a line for each of `messages` (the agent logs a step
 * after it acts, so what the cloud or the pool shows can be ahead of the log); returns the
 * log's lines about `id`.
 */
export async function waitForLogLines(
  logFile: string,
  id: string,
  messages: readonly string[],
): Promise<string[]> {
  let about: string[] = [];
  try {
    return await waitFor(`${messages.join(', ')} in the agent log for ${id}`, async () => {
      about = (await readFile(logFile, 'utf8')).split('\n').filter((l) => l.includes(id));
      return messages.every((m) => about.some((l) => l.includes(m))) ? about : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; its lines about ${id}:\n${about.join('\n')}`);
  }
}

/**
 * Waits until `ip` cools down after its pod's DEL (its DEL releases the address before it
 * answers; the wait only bridges reading the state over the agent's socket).
 */
export async function waitCooling(node: LabNodeDesc, ip: string): Promise<void> {
  await waitFor(
    `${ip} to cool down after its DEL`,
    async () => ((await agentState(node)).cooling.some((c) => c.ip === ip) ? true : undefined),
    5000,
  );
}

/** What `npm run image --json` (scripts/image.ts) prints. */
export interface BuiltAgentImage {
  readonly image: string;
  /** The image's full ID: names exactly this build, whatever retags the name later. */
  readonly id: string;
  readonly sizeBytes: number;
}

/**
 * Builds the vpcnet image as `npm run image` does (its Debian base is cached after the first
 * build, ~25 s; later builds take seconds), for `labUp(name, ['--agent-image', image])`.
 */
export async function buildAgentImage(): Promise<BuiltAgentImage> {
  const script = join(repoRoot, 'scripts', 'image.ts');
  const r = await runToSuccess([process.execPath, '--import', 'tsx', script, '--json'], {
    timeoutMs: 600_000,
  });
  return JSON.parse(r.stdout) as BuiltAgentImage;
}

/**
 * Stops the node's agent by its recorded PID (SIGTERM: a graceful stop; SIGKILL: a crash) and waits
 * until the lab supervisor's new one is healthy.
 */
export async function restartAgent(
  lab: string,
  node: LabNodeDesc,
  signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM',
): Promise<void> {
  const pidsDir = labLayout(lab, 0).files.pidsDir;
  const role = `agent-${node.name}`;
  const before = (await readRecords(pidsDir)).find((r) => r.role === role);
  if (before === undefined) throw new Error(`no ${role} recorded in ${pidsDir}`);
  process.kill(before.pid, signal);
  await waitFor(
    `the supervisor to restart ${role}`,
    async () => {
      const now = (await readRecords(pidsDir)).find((r) => r.role === role);
      if (now === undefined || now.pid === before.pid || !isRecordedProcessAlive(now)) return undefined;
      return (await getJson(node.agentSocket, '/v1/healthz')).status === 200 ? true : undefined;
    },
    60_000,
  );
}

/**
 * A namespace `netns` behind the node holding IPv6 address `ipv6` (a veth from the node's
 * namespace, a /128 route to it on the node, its default route via the node's link-local): what
 * a pod of the node's /80 looks like to the VPC, without the agent. Returns its removal.
 */
export async function ipv6BehindNode(
  node: LabNodeDesc,
  netns: string,
  ipv6: string,
): Promise<() => Promise<void>> {
  const hostSide = `${netns.slice(0, 11)}h`;
  const remove = async () => {
    await runProcess(['ip', 'netns', 'del', netns]);
  };
  await sh(['ip', 'netns', 'add', netns]);
  try {
    await sh([
      'ip',
      '-n',
      node.netns,
      'link',
      'add',
      'name',
      hostSide,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      netns,
    ]);
    await sh(['ip', '-n', netns, 'link', 'set', 'lo', 'up']);
    await sh(['ip', '-n', netns, 'link', 'set', 'eth0', 'up']);
    await sh(['ip', '-n', node.netns, 'link', 'set', hostSide, 'up']);
    await sh(['ip', '-n', netns, 'addr', 'add', `${ipv6}/128`, 'dev', 'eth0', 'nodad']);
    await sh(['ip', '-n', node.netns, '-6', 'route', 'add', `${ipv6}/128`, 'dev', hostSide]);
    const linkLocal = await waitFor(`a link-local address on ${hostSide}`, async () => {
      const out = JSON.parse(
        await sh(['ip', '-n', node.netns, '-j', '-6', 'addr', 'show', 'dev', hostSide]),
      ) as {
        addr_info: { local: string; scope: string; tentative?: boolean }[];
      }[];
      return out[0]?.addr_info.find((a) => a.scope === 'link' && a.tentative !== true)?.local;
    });
    await sh(['ip', '-n', netns, '-6', 'route', 'add', 'default', 'via', linkLocal, 'dev', 'eth0']);
    return remove;
  } catch (err) {
    await remove();
    throw err;
  }
}
