// A test runtime for the conformance suite: one lab per suite, and the installed plugin exec'd in
// the node's namespace with exactly the CNI environment and stdin a runtime would give it. Unlike
// src/lab/cni-runtime.ts, every variable can be left out or set to anything, so a test can also
// hand the plugin what a broken runtime would. The configuration is derived from the conflist
// `vpcnetctl lab up` installed, as libcni derives it (list name and chosen version inserted).
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { type NetConfList, readConfList } from '../../src/lab/cni-runtime.ts';
import { listNetns } from '../../src/lab/netns.ts';
import {
  type AgentState,
  agentState,
  type LabDesc,
  type LabNodeDesc,
  labUp,
  newPod,
  type TestPod,
} from '../lab-fixture.ts';
import { links, routes, rules } from './kernel-view.ts';
import { expectQuietSuccess, expectResult, type PluginRun, type SuccessResult } from './wire-shapes.ts';

/** The environment of one plugin execution; a variable set to undefined is left out. */
export type CniEnv = Readonly<Record<string, string | undefined>>;

export interface AttachmentCall {
  readonly pod: TestPod;
  readonly version: string;
  /** CNI_IFNAME; eth0 unless set. */
  readonly ifName?: string;
  /** CNI_NETNS: the pod's path unless set; '' sends it empty, null leaves it out. */
  readonly netns?: string | null;
  readonly prevResult?: unknown;
  /** Keys added to (or, when undefined, removed from) the plugin configuration. */
  readonly config?: Readonly<Record<string, unknown>>;
}

/** An ADD that succeeded: its parsed result and the facts tests use most. */
export interface Added {
  readonly result: SuccessResult;
  readonly ip: string;
  readonly hostVeth: string;
}

/** One lab node and its installed conflist, driven as a container runtime drives a CNI plugin. */
export class ConformanceRuntime {
  private podCount = 0;

  private constructor(
    readonly lab: LabDesc,
    readonly node: LabNodeDesc,
    readonly conflist: NetConfList,
  ) {}

  /** Brings up lab `name` (the caller's `after` runs `labDown(name)`, also when this fails). */
  static async start(
    name: string,
    instanceType: string,
    agentEnv: readonly string[] = [],
  ): Promise<ConformanceRuntime> {
    // A suite adds and deletes a few hundred pods in a minute; a 1 s cooldown keeps the pool from
    // running dry without changing any rule the suite checks.
    const env = ['IP_COOLDOWN_PERIOD=1', ...agentEnv].flatMap((e) => ['--agent-env', e]);
    const lab = await labUp(name, ['--instance-type', instanceType, ...env]);
    const node = lab.nodes[0];
    if (!node) throw new Error(`lab ${name} has no node`);
    const conflist = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    return new ConformanceRuntime(lab, node, conflist);
  }

  get vpcHost(): { netns: string; ip: string } {
    const host = this.lab.vpcHosts[0];
    if (!host) throw new Error(`lab ${this.lab.name} has no VPC host`);
    return host;
  }

  /** A fresh sandbox: a network namespace of this lab, with a container ID of its own. */
  newPod(): Promise<TestPod> {
    this.podCount += 1;
    return newPod(this.lab.name, `p${this.podCount}`);
  }

  /** The installed plugin's configuration at `version`, as libcni hands it to the plugin. */
  pluginConfig(version: string, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
    const plugin = this.conflist.plugins[0];
    if (!plugin) throw new Error(`conflist ${this.conflist.name} lists no plugin`);
    const conf: Record<string, unknown> = { ...plugin, cniVersion: version, name: this.conflist.name };
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete conf[k];
      else conf[k] = v;
    }
    return conf;
  }

  /** Execs the installed plugin in the node's namespace with exactly `env` (plus PATH) and `stdin`. */
  async exec(env: CniEnv, stdin: string): Promise<PluginRun> {
    const full: Record<string, string> = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
    for (const [k, v] of Object.entries(env)) if (v !== undefined) full[k] = v;
    const bin = join(this.node.cniBinDir, 'vpcnet');
    const out = await runProcess(['ip', 'netns', 'exec', this.node.netns, bin], {
      env: full,
      stdin,
      timeoutMs: 60_000,
    });
    return { exitCode: out.code, stdout: out.stdout, stderr: out.stderr };
  }

  /** The environment a runtime sets for ADD, DEL or CHECK of `call`. */
  attachmentEnv(command: string, call: AttachmentCall): Record<string, string | undefined> {
    const netns =
      call.netns === undefined ? call.pod.netnsPath : call.netns === null ? undefined : call.netns;
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: call.pod.containerId,
      CNI_NETNS: netns,
      CNI_IFNAME: call.ifName ?? 'eth0',
      CNI_PATH: this.node.cniBinDir,
      CNI_ARGS: `K8S_POD_NAMESPACE=${call.pod.namespace};K8S_POD_NAME=${call.pod.name};K8S_POD_INFRA_CONTAINER_ID=${call.pod.containerId}`,
    };
  }

  /** ADD, DEL or CHECK of one attachment, as a runtime would run it. */
  run(command: 'ADD' | 'DEL' | 'CHECK', call: AttachmentCall): Promise<PluginRun> {
    const conf = this.pluginConfig(call.version, {
      ...(call.prevResult === undefined ? {} : { prevResult: call.prevResult }),
      ...call.config,
    });
    return this.exec(this.attachmentEnv(command, call), JSON.stringify(conf));
  }

  /** GC or STATUS: only CNI_COMMAND and CNI_PATH, as the 1.1.0 spec gives them. */
  runNetworkCommand(
    command: 'GC' | 'STATUS',
    version: string,
    config: Readonly<Record<string, unknown>> = {},
  ): Promise<PluginRun> {
    const conf = this.pluginConfig(version, config);
    return this.exec({ CNI_COMMAND: command, CNI_PATH: this.node.cniBinDir }, JSON.stringify(conf));
  }

  /** ADD that must succeed; returns the result and the pod's address and host veth from it. */
  async add(call: AttachmentCall): Promise<Added> {
    const result = expectResult(await this.run('ADD', call), call.version);
    const ifName = call.ifName ?? 'eth0';
    const ip = result.ips?.find(
      (i) => i.interface !== undefined && result.interfaces?.[i.interface]?.name === ifName,
    );
    const host = result.interfaces?.find((i) => i.sandbox === undefined || i.sandbox === '');
    if (!ip || !host)
      throw new Error(
        `ADD result names no address on ${ifName} or no host interface: ${JSON.stringify(result)}`,
      );
    return { result, ip: ip.address.split('/')[0] ?? '', hostVeth: host.name };
  }

  /** ADD that must succeed, with a DEL of the same attachment queued to run when the test ends. */
  async attach(t: TestContext, call: AttachmentCall): Promise<Added> {
    t.after(async () => {
      await this.run('DEL', call);
    });
    return this.add(call);
  }

  /** DEL that must succeed. */
  async del(call: AttachmentCall): Promise<void> {
    expectQuietSuccess(await this.run('DEL', call));
  }

  state(): Promise<AgentState> {
    return agentState(this.node);
  }

  /**
   * What is left of an attachment after its DEL: its ledger record, its host veth, host routes and
   * rules naming its address, and (while the sandbox exists) its pod interface. Empty when all gone.
   */
  async remainsOf(pod: TestPod, added: Added, ifName = 'eth0'): Promise<string[]> {
    const left: string[] = [];
    const records = await this.attachmentsOf(pod.containerId);
    for (const r of records.filter((a) => a.ip === added.ip)) left.push(`ledger record ${r.keyString}`);
    const hostLinks = await links(this.node.netns);
    if (hostLinks.some((l) => l.ifname === added.hostVeth)) left.push(`host veth ${added.hostVeth}`);
    for (const r of await routes(this.node.netns))
      if (r.dst === added.ip) left.push(`host route to ${added.ip} dev ${r.dev ?? '?'}`);
    for (const r of await rules(this.node.netns)) {
      if (r.src === added.ip || r.dst === added.ip) left.push(`host rule ${JSON.stringify(r)}`);
    }
    if (await netnsExists(pod.netnsName)) {
      if ((await links(pod.netnsName)).some((l) => l.ifname === ifName)) left.push(`pod interface ${ifName}`);
    }
    return left;
  }

  /** The ledger's attachments of `containerId` (any network, any interface). */
  async attachmentsOf(containerId: string): Promise<AgentState['attachments']> {
    return (await this.state()).attachments.filter((a) => a.key.containerId === containerId);
  }
}

async function netnsExists(name: string): Promise<boolean> {
  return (await listNetns()).includes(name);
}
