// The storm's kubelet and container runtime: pods in the lab's Kubernetes API, sandboxes as
// network namespaces named with the lab's prefix (so `lab down` removes what a failed storm
// leaves), the installed plugin chain exec'd in the node's namespace, and the runtime's retries:
// an ADD answered "try again later" (code 11, the agent is down) is retried on the same sandbox;
// any other failed ADD is cleaned up with a DEL and retried; a failed DEL is retried. All bounded.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultSettings } from '../emulator/api.ts';
import { errorText } from '../infra/error-text.ts';
import { runProcess, runToSuccess } from '../infra/process.ts';
import { type CniCall, execPlugin, PluginFailed, readConfList, runChain } from '../lab/cni-runtime.ts';
import { isRecordedProcessAlive, readRecords } from '../lab/processes/processes.ts';
import { unixJson } from '../lab/unix-http.ts';
import { deleteLabPod, labPod } from '../lab/verbs/pod.ts';

export interface StormLab {
  readonly name: string;
  readonly node: {
    readonly name: string;
    readonly netns: string;
    readonly cniBinDir: string;
    readonly cniConfDir: string;
  };
  readonly adminSocket: string;
  readonly pidsDir: string;
}

export interface Sandbox {
  readonly containerId: string;
  readonly netnsName: string;
  readonly netnsPath: string;
}

export interface StormPod {
  readonly name: string;
  readonly uid: string;
  readonly sg: boolean;
}

/** How long the runtime keeps retrying one ADD or DEL before it gives up. */
const RETRY_BOUND_MS = 120_000;
const RETRY_PAUSE_MS = 500;
/** The node's agent, as the lab records it (src/lab/processes/agents.ts agentRole). */
const agentRole = (node: string) => `agent-${node}`;
const SG = ['sg-0a1b2c3d'];

function exitCodeOf(err: unknown): number | undefined {
  if (!(err instanceof PluginFailed)) return undefined;
  try {
    const code = (JSON.parse(err.output.stdout) as { code?: unknown }).code;
    return typeof code === 'number' ? code : undefined;
  } catch {
    return undefined;
  }
}

export class StormRuntime {
  readonly #lab: StormLab;
  readonly #note: (line: string) => void;
  #sandboxes = 0;
  /** ADD attempts answered code 11, and other failed attempts, across the storm. */
  retries = { agentDown: 0, failed: 0 };

  constructor(lab: StormLab, note: (line: string) => void) {
    this.#lab = lab;
    this.#note = note;
  }

  async registerPod(pod: StormPod): Promise<void> {
    await labPod({
      name: this.#lab.name,
      node: this.#lab.node.name,
      namespace: 'default',
      pod: pod.name,
      uid: pod.uid,
      ...(pod.sg ? { securityGroups: SG } : {}),
    });
  }

  async deletePod(pod: StormPod): Promise<void> {
    await deleteLabPod({ name: this.#lab.name, namespace: 'default', pod: pod.name });
  }

  async newSandbox(pod: StormPod): Promise<Sandbox> {
    const n = ++this.#sandboxes;
    const netnsName = `${this.#lab.name}-${pod.name}-s${n}`;
    await runToSuccess(['ip', 'netns', 'add', netnsName]);
    return { containerId: `storm${pod.name}s${n}`, netnsName, netnsPath: `/var/run/netns/${netnsName}` };
  }

  async removeNetns(sb: Sandbox): Promise<void> {
    await runProcess(['ip', 'netns', 'delete', sb.netnsName]);
  }

  #call(pod: StormPod, sb: Sandbox, command: 'ADD' | 'DEL', netns: string): CniCall {
    const node = this.#lab.node;
    return {
      nodeNetns: node.netns,
      cniBinDir: node.cniBinDir,
      command,
      containerId: sb.containerId,
      netns,
      ifName: 'eth0',
      args: {
        K8S_POD_NAMESPACE: 'default',
        K8S_POD_NAME: pod.name,
        K8S_POD_UID: pod.uid,
        K8S_POD_INFRA_CONTAINER_ID: sb.containerId,
      },
    };
  }

  async #chain(call: CniCall): Promise<unknown> {
    const list = await readConfList(join(this.#lab.node.cniConfDir, '10-vpcnet.conflist'));
    return runChain(call, list);
  }

  /** ADD until it succeeds (bounded); returns the pod's address. */
  async add(pod: StormPod, sb: Sandbox): Promise<string> {
    const deadline = Date.now() + RETRY_BOUND_MS;
    for (;;) {
      try {
        const result = (await this.#chain(this.#call(pod, sb, 'ADD', sb.netnsPath))) as {
          ips?: { address: string }[];
        };
        const ip = result.ips?.[0]?.address.split('/')[0];
        if (ip === undefined) throw new Error(`ADD of ${sb.containerId} returned no address`);
        return ip;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`ADD of ${sb.containerId} (pod ${pod.name}) kept failing: ${errorText(err)}`);
        if (exitCodeOf(err) === 11) this.retries.agentDown++;
        else {
          this.retries.failed++;
          this.#note(
            `  ADD of ${sb.containerId} failed, runtime cleans up and retries: ${errorText(err).slice(0, 300)}`,
          );
          await this.del(pod, sb, sb.netnsPath);
        }
        await sleep(RETRY_PAUSE_MS);
      }
    }
  }

  /** DEL until it succeeds (bounded); `netns` may be '' (the runtime no longer knows it). */
  async del(pod: StormPod, sb: Sandbox, netns: string): Promise<void> {
    const deadline = Date.now() + RETRY_BOUND_MS;
    for (;;) {
      try {
        await this.#chain(this.#call(pod, sb, 'DEL', netns));
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`DEL of ${sb.containerId} (pod ${pod.name}) kept failing: ${errorText(err)}`);
        this.#note(`  DEL of ${sb.containerId} failed, runtime retries: ${errorText(err).slice(0, 300)}`);
        await sleep(RETRY_PAUSE_MS);
      }
    }
  }

  /** CNI GC with an empty list of valid attachments, as a runtime's GC with no sandboxes left. */
  async gc(): Promise<void> {
    const node = this.#lab.node;
    const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    const plugin = list.plugins[0];
    if (plugin === undefined || typeof plugin.type !== 'string')
      throw new Error('the conflist has no plugin');
    // GC came with CNI 1.1.0; a runtime that sends it speaks 1.1.0 whatever the conflist says.
    const conf = { ...plugin, cniVersion: '1.1.0', name: list.name, 'cni.dev/valid-attachments': [] };
    const call: CniCall = {
      nodeNetns: node.netns,
      cniBinDir: node.cniBinDir,
      command: 'GC',
      containerId: '',
      netns: '',
      ifName: '',
    };
    const out = await execPlugin(call, plugin.type, JSON.stringify(conf));
    if (out.exitCode !== 0)
      throw new Error(`CNI GC failed (exit ${out.exitCode}): ${out.stdout.trim() || out.stderr.trim()}`);
  }

  /** SIGKILLs the node's agent (only the PID the lab recorded for it); false if it was not running. */
  async killAgent(): Promise<number | undefined> {
    const rec = (await readRecords(this.#lab.pidsDir)).find((r) => r.role === agentRole(this.#lab.node.name));
    if (rec === undefined || !isRecordedProcessAlive(rec)) return undefined;
    process.kill(rec.pid, 'SIGKILL');
    return rec.pid;
  }

  async setFaults(settings: FaultSettings): Promise<void> {
    await unixJson(this.#lab.adminSocket, 'PUT', '/admin/faults', settings);
  }
}
