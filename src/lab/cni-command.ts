// `vpcnetctl lab cni ADD|DEL|CHECK --name L --pod NS/NAME`: a container runtime and kubelet for
// one pod of a lab, so that a person can try the installed plugin without writing a config or
// CNI_ARGS by hand. ADD makes the pod's sandbox (a network namespace named after the lab, so `lab
// down` removes it), runs the node's whole conflist in the node's namespace with the pod's
// K8S_POD_* arguments (runChain, as libcni does), caches the result as a runtime does, and reports
// the pod's IPs in its status as the kubelet would. CHECK and DEL run the chain with that cached
// result as prevResult; DEL then removes the sandbox and the cache entry.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError } from '../cli/usage-error.ts';
import { errorText } from '../infra/error-text.ts';
import { runProcess, runToSuccess } from '../infra/process.ts';
import { type CniCall, type CniCommand, readConfList, runChain } from './cni-runtime.ts';
import { type LabDescription, labLayout } from './layout.ts';
import { readDescription } from './pod.ts';
import { unixHttp, unixJson } from './unix-http.ts';

export const CNI_HELP = `Usage: vpcnetctl lab cni ADD|DEL|CHECK --name L --pod NAMESPACE/NAME [--ifname IF] [--json]

Runs the node's whole CNI chain for a pod of lab L as a container runtime would: the installed
conflist's plugins in order (DEL in reverse), exec'd inside the node's network namespace, with
CNI_ARGS K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID and K8S_POD_INFRA_CONTAINER_ID, so that a pod
registered with --security-groups gets its branch ENI and 'vpcnetctl explain --lab L NS/NAME'
finds its record. The pod must be registered first (vpcnetctl lab pod); its node is the one it was
registered on.

  ADD    makes the pod's sandbox, network namespace L-pod-NAMESPACE-NAME, runs ADD, keeps the
         result (as a runtime caches it) and reports the pod's IP in its status, as the kubelet
         does; prints the CNI result (--json) or one line
  CHECK  runs CHECK with the kept result as prevResult
  DEL    runs DEL with the kept result, then removes the sandbox and what was kept
  --ifname IF   the pod's interface (default eth0)
Exit codes: 0, 1 the chain failed (its error is printed), 2 usage error.
`;

const COMMANDS: readonly CniCommand[] = ['ADD', 'DEL', 'CHECK'];

/** What the runtime keeps of a sandbox between ADD and DEL. */
interface SandboxRecord {
  readonly containerId: string;
  readonly netns: string;
  readonly node: string;
  readonly ifName: string;
  readonly uid: string;
  readonly result: unknown;
}

function podRef(text: string | undefined): { namespace: string; name: string } {
  const m = /^([a-z0-9][-a-z0-9.]*)\/([a-z0-9][-a-z0-9.]*)$/.exec(text ?? '');
  if (m === null) throw new UsageError(`--pod takes NAMESPACE/NAME, not ${JSON.stringify(text ?? '')}`);
  return { namespace: m[1] ?? '', name: m[2] ?? '' };
}

function sandboxFile(lab: string, ns: string, name: string): string {
  return join(labLayout(lab, 0).stateDir, 'sandboxes', `${ns}_${name}.json`);
}

/** The sandbox's network namespace: the lab's prefix, so `lab down` removes whatever is left. */
function sandboxNetns(lab: string, ns: string, name: string): string {
  return `${lab}-pod-${ns}-${name}`;
}

async function readSandbox(file: string): Promise<SandboxRecord | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as SandboxRecord;
  } catch {
    return undefined;
  }
}

interface RegisteredPod {
  readonly node: string;
  readonly uid: string;
}

async function registeredPod(lab: string, ns: string, name: string): Promise<RegisteredPod> {
  const socket = labLayout(lab, 0).emulator.adminSocket;
  const res = await unixHttp(socket, 'GET', `/api/v1/namespaces/${ns}/pods/${name}`);
  if (res.status === 404) {
    throw new UsageError(
      `pod ${ns}/${name} is not registered in lab ${lab}; register it first: vpcnetctl lab pod --name ${lab} --node node1 --namespace ${ns} --pod ${name}`,
    );
  }
  if (res.status !== 200)
    throw new Error(`reading pod ${ns}/${name} from lab ${lab}'s API: HTTP ${res.status}`);
  const pod = JSON.parse(res.body) as { metadata?: { uid?: string }; spec?: { nodeName?: string } };
  const node = pod.spec?.nodeName;
  if (node === undefined) throw new Error(`pod ${ns}/${name} is bound to no node`);
  return { node, uid: pod.metadata?.uid ?? '' };
}

function nodeOf(description: LabDescription, node: string) {
  const found = description.nodes.find((n) => n.name === node);
  if (found === undefined) throw new Error(`lab ${description.name} has no node ${node}`);
  return found;
}

/** The pod's addresses from an ADD result (a runtime reports these to the kubelet). */
function resultIps(result: unknown): string[] {
  const ips = (result as { ips?: { address?: unknown }[] } | null)?.ips ?? [];
  return ips.flatMap((i) => (typeof i.address === 'string' ? [i.address.split('/')[0] ?? ''] : []));
}

export async function labCniCommand(args: string[], out: (s: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      pod: { type: 'string' },
      ifname: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const command = (positionals[0] ?? '').toUpperCase() as CniCommand;
  if (positionals.length !== 1 || !COMMANDS.includes(command)) {
    throw new UsageError(
      `name one command: ADD, DEL or CHECK (got ${JSON.stringify(positionals.join(' '))})`,
    );
  }
  if (!values.name) throw new UsageError('--name is required');
  const lab = values.name;
  const { namespace, name } = podRef(values.pod);
  const description = await readDescription(labLayout(lab, 0), lab);
  const file = sandboxFile(lab, namespace, name);
  const kept = await readSandbox(file);
  const ifName = values.ifname ?? kept?.ifName ?? 'eth0';
  if (command === 'ADD' && kept !== undefined) {
    throw new UsageError(
      `pod ${namespace}/${name} has a sandbox already (${kept.containerId}); DEL it first: vpcnetctl lab cni DEL --name ${lab} --pod ${namespace}/${name}`,
    );
  }
  if (command !== 'ADD' && kept === undefined) {
    throw new UsageError(`pod ${namespace}/${name} has no sandbox in lab ${lab} (no ADD ran for it)`);
  }
  const pod =
    kept === undefined ? await registeredPod(lab, namespace, name) : { node: kept.node, uid: kept.uid };
  const node = nodeOf(description, pod.node);
  const record: SandboxRecord = kept ?? {
    containerId: `labcni${randomBytes(10).toString('hex')}`,
    netns: sandboxNetns(lab, namespace, name),
    node: pod.node,
    ifName,
    uid: pod.uid,
    result: undefined,
  };
  const call: CniCall = {
    nodeNetns: node.netns,
    cniBinDir: node.cniBinDir,
    command,
    containerId: record.containerId,
    netns: `/var/run/netns/${record.netns}`,
    ifName: record.ifName,
    args: {
      K8S_POD_NAMESPACE: namespace,
      K8S_POD_NAME: name,
      ...(record.uid === '' ? {} : { K8S_POD_UID: record.uid }),
      K8S_POD_INFRA_CONTAINER_ID: record.containerId,
    },
  };
  const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
  const who = `pod ${namespace}/${name} on ${node.name}`;
  if (command === 'ADD') {
    await runToSuccess(['ip', 'netns', 'add', record.netns]);
    let result: unknown;
    try {
      result = await runChain(call, list);
    } catch (err) {
      // What a runtime does with a failed ADD: DEL, then the sandbox goes.
      await runChain({ ...call, command: 'DEL' }, list).catch(() => undefined);
      await runProcess(['ip', 'netns', 'delete', record.netns]);
      throw new ChainFailed(`ADD of ${who} failed: ${errorText(err)}`);
    }
    await mkdir(join(labLayout(lab, 0).stateDir, 'sandboxes'), { recursive: true });
    await writeFile(file, `${JSON.stringify({ ...record, result })}\n`);
    const ips = resultIps(result);
    await reportPodIps(lab, namespace, name, ips);
    out(
      values.json === true
        ? `${JSON.stringify(result, null, 2)}\n`
        : `ADD ${who}: ${ips.join(', ') || 'no address'} (sandbox ${record.containerId}, netns ${record.netns})\n`,
    );
    return 0;
  }
  try {
    await runChain(call, list, record.result);
  } catch (err) {
    throw new ChainFailed(`${command} of ${who} failed: ${errorText(err)}`);
  }
  if (command === 'DEL') {
    await runProcess(['ip', 'netns', 'delete', record.netns]);
    await rm(file, { force: true });
  }
  out(`${command} ${who}: done (sandbox ${record.containerId})\n`);
  return 0;
}

/** The kubelet's part: the pod's status carries the IPs its runtime reported. */
async function reportPodIps(lab: string, ns: string, name: string, ips: readonly string[]): Promise<void> {
  if (ips.length === 0) return;
  const socket = labLayout(lab, 0).emulator.adminSocket;
  await unixJson(socket, 'PATCH', `/api/v1/namespaces/${ns}/pods/${name}`, {
    status: { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })), phase: 'Running' },
  });
}

/** The plugin chain answered an error: exit 1 with its message (not a usage error). */
export class ChainFailed extends Error {}
