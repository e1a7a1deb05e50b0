// The kernel driver that speaks through the `ip` and `nft` commands (the agent's own driver is
// netlink/, its resident helper; this one stays as the reference the helper is held to, and sets up
// the node's nftables tables). Budget: a handful of processes per operation, never one per route or
// rule: one `ip -batch` per namespace an operation touches, and one `nft -f` for the SNAT set.

import { isAlreadyGone, isSnatOp, type KernelOp, opText } from '../../plan/kernel-op.ts';
import type { NodeView, PodView } from '../../plan/views.ts';
import { DataplaneError } from '../errors.ts';
import type {
  AwsNodeFirewallRemoval,
  EgressSnatConfig,
  Kernel,
  Namespace,
  NodeNetworkConfig,
  NodePortConfig,
  RunFailure,
  RunResult,
  V4EgressConfig,
} from '../kernel.ts';
import { removeAwsNodeFirewall } from './aws-node-firewall.ts';
import { type CommandResult, type CommandRunner, spawnRunner } from './command.ts';
import {
  type EgressTable,
  removeEgressScript,
  setupEgressScript,
  V4_EGRESS_TABLE,
  V6_EGRESS_TABLE,
} from './egress-snat.ts';
import { batchOutputs, parseBatchFailures } from './ip-batch.ts';
import { parseLinks, parseNeighbours, parseRoutes, parseRules } from './ip-json.ts';
import { nodePortRuleChanges, nodePortScript, parseNodePortRules } from './node-port.ts';
import {
  addSnatScript,
  listSnatSetArgv,
  parseSnatElements,
  removeSnatScript,
  setupNodeScript,
} from './snat.ts';

export interface IpCliKernelDeps {
  readonly runner?: CommandRunner;
  /**
   * Path of the node's network namespace. Unset (production): the agent's own namespace, commands
   * run directly. Set (tests, lab): node-side commands run under `nsenter --net=<path>`.
   */
  readonly hostNetns?: string;
  /** Pid whose namespace receives host veths when hostNetns is unset; default: this process. */
  readonly agentPid?: number;
  /**
   * Whether the node does SNAT (default true). With external SNAT (AWS_VPC_K8S_CNI_EXTERNALSNAT)
   * nftables is never touched, so the agent also runs where nf_tables is missing.
   */
  readonly snat?: boolean;
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join('; ') || 'no message';
}

const NODE_READ = ['addr show', 'route show table all', 'rule show'];
const POD_READ = ['addr show', 'route show table all', 'neigh show', 'rule show'];

export class IpCliKernel implements Kernel {
  readonly #runner: CommandRunner;
  readonly #hostPrefix: readonly string[];
  /** How a pod's namespace names the node's, for the host end of a veth created from inside it. */
  readonly #nodeNetnsRef: string;
  readonly #snat: boolean;
  #commands = 0;

  constructor(deps: IpCliKernelDeps = {}) {
    this.#runner = deps.runner ?? spawnRunner;
    this.#hostPrefix = deps.hostNetns === undefined ? [] : ['nsenter', `--net=${deps.hostNetns}`];
    // nsenter --net changes only the network namespace, so /proc still shows the agent's pid.
    this.#nodeNetnsRef = deps.hostNetns ?? `/proc/${deps.agentPid ?? process.pid}/ns/net`;
    this.#snat = deps.snat ?? true;
  }

  /** Processes spawned so far (for measuring the per-operation budget). */
  get commandsRun(): number {
    return this.#commands;
  }

  #exec(ns: Namespace, argv: readonly string[], stdin?: string): Promise<CommandResult> {
    this.#commands++;
    const prefix = ns.side === 'node' ? this.#hostPrefix : ['nsenter', `--net=${ns.path}`];
    return this.#runner([...prefix, ...argv], stdin);
  }

  async run(ns: Namespace, ops: readonly KernelOp[], mode: 'stop' | 'all'): Promise<RunResult> {
    const ipOps = ops.map((op, index) => ({ op, index })).filter((x) => !isSnatOp(x.op));
    const nftOps = ops.map((op, index) => ({ op, index })).filter((x) => isSnatOp(x.op));
    const runIp = async (): Promise<RunResult> => {
      if (ipOps.length === 0) return { entered: true, failures: [] };
      const lines = ipOps.map((x) => opText(x.op, this.#nodeNetnsRef));
      const argv = mode === 'all' ? ['ip', '-force', '-batch', '-'] : ['ip', '-batch', '-'];
      const r = await this.#exec(ns, argv, `${lines.join('\n')}\n`);
      if (r.code === 0) return { entered: true, failures: [] };
      const failures = parseBatchFailures(r.stderr);
      // No failing line: ip never read the batch (nsenter could not enter, or ip is missing).
      if (failures.length === 0) return { entered: false, reason: firstLines(r.stderr) };
      return {
        entered: true,
        failures: failures.map((f) => ({ index: ipOps[f.line - 1]?.index ?? -1, message: f.message })),
      };
    };
    const runNft = async (): Promise<RunFailure[]> => {
      if (nftOps.length === 0) return [];
      const adds = nftOps.filter((x) => x.op.op === 'snatAdd').map((x) => (x.op as { ip: string }).ip);
      const dels = nftOps.filter((x) => x.op.op === 'snatDel').map((x) => (x.op as { ip: string }).ip);
      const script =
        (adds.length > 0 ? addSnatScript(adds) : '') + (dels.length > 0 ? removeSnatScript(dels) : '');
      const r = await this.#exec(ns, ['nft', '-f', '-'], script);
      // One nft transaction: it failed as a whole, reported at its first operation.
      return r.code === 0 ? [] : [{ index: nftOps[0]?.index ?? -1, message: firstLines(r.stderr) }];
    };
    if (mode === 'all') {
      const [ip, nft] = await Promise.all([runIp(), runNft()]);
      if (!ip.entered) return ip;
      return { entered: true, failures: [...ip.failures, ...nft] };
    }
    const ip = await runIp();
    if (!ip.entered || ip.failures.length > 0) return ip;
    return { entered: true, failures: await runNft() };
  }

  async readNode(): Promise<NodeView> {
    const [ip, snatElements] = await Promise.all([
      this.#exec({ side: 'node' }, ['ip', '-d', '-j', '-batch', '-'], `${NODE_READ.join('\n')}\n`),
      this.readSnatSet(),
    ]);
    if (ip.code !== 0) {
      const f = parseBatchFailures(ip.stderr)[0];
      const step = f ? (NODE_READ[f.line - 1] ?? '?') : 'ip -j -batch';
      throw new DataplaneError('observeNode', step, '', f?.message ?? firstLines(ip.stderr));
    }
    const out = batchOutputs(ip.stdout, ip.stderr, [1, 2, 3]);
    return {
      links: parseLinks(out.get(1)),
      routes: parseRoutes(out.get(2)),
      rules: parseRules(out.get(3)),
      neighbours: [],
      snatElements,
    };
  }

  /** The SNAT set's elements (undefined when the set does not exist or the node does no SNAT). */
  async readSnatSet(): Promise<readonly string[] | undefined> {
    if (!this.#snat) return undefined;
    const nft = await this.#exec({ side: 'node' }, listSnatSetArgv());
    if (nft.code === 0) return parseSnatElements(nft.stdout);
    // nft says ENOENT when the table or set does not exist (setupNode not run): no elements then.
    if (isAlreadyGone(nft.stderr)) return undefined;
    throw new DataplaneError('observeNode', listSnatSetArgv().join(' '), '', firstLines(nft.stderr));
  }

  async readPod(path: string): Promise<PodView> {
    const r = await this.#exec(
      { side: 'pod', path },
      ['ip', '-d', '-j', '-force', '-batch', '-'],
      `${POD_READ.join('\n')}\n`,
    );
    if (r.code !== 0 && parseBatchFailures(r.stderr).length === 0) {
      return { reachable: false, reason: firstLines(r.stderr) };
    }
    const out = batchOutputs(r.stdout, r.stderr, [1, 2, 3, 4]);
    return {
      reachable: true,
      links: parseLinks(out.get(1)),
      routes: parseRoutes(out.get(2)),
      rules: parseRules(out.get(4)),
      neighbours: parseNeighbours(out.get(3)),
    };
  }

  setupV4Egress(cfg: V4EgressConfig | undefined): Promise<void> {
    return this.#setupEgress(V4_EGRESS_TABLE, cfg);
  }

  setupV6Egress(cfg: EgressSnatConfig | undefined): Promise<void> {
    return this.#setupEgress(V6_EGRESS_TABLE, cfg);
  }

  async #setupEgress(t: EgressTable, cfg: EgressSnatConfig | undefined): Promise<void> {
    const script = cfg === undefined ? removeEgressScript(t) : setupEgressScript(t, cfg);
    const r = await this.#exec({ side: 'node' }, ['nft', '-f', '-'], script);
    if (r.code !== 0) {
      const step = `nft -f (table ${t.family} ${t.name}${cfg === undefined ? ', removal' : ''})`;
      throw new DataplaneError('setupNode', step, '', firstLines(r.stderr));
    }
  }

  async readNodeSysctl(name: string): Promise<string> {
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)+$/.test(name))
      throw new Error(`invalid sysctl name ${JSON.stringify(name)}`);
    // The file, read in the node's namespace (/proc/sys/net shows the reader's): `cat` is in the
    // agent's image (busybox), `sysctl` (procps) is not.
    const file = `/proc/sys/${name.replaceAll('.', '/')}`;
    const r = await this.#exec({ side: 'node' }, ['cat', file]);
    if (r.code !== 0) throw new DataplaneError('setupNode', `cat ${file}`, '', firstLines(r.stderr));
    return r.stdout.trim();
  }

  removeAwsNodeFirewall(): Promise<AwsNodeFirewallRemoval> {
    return removeAwsNodeFirewall((argv, stdin) => this.#exec({ side: 'node' }, argv, stdin));
  }

  async setupSnat(cfg: NodeNetworkConfig): Promise<void> {
    const r = await this.#exec({ side: 'node' }, ['nft', '-f', '-'], setupNodeScript(cfg));
    if (r.code !== 0) {
      throw new DataplaneError('setupNode', 'nft -f (table ip vpcnet)', '', firstLines(r.stderr));
    }
  }

  async setupNodePort(cfg: NodePortConfig): Promise<void> {
    const node: Namespace = { side: 'node' };
    const r = await this.#exec(node, ['nft', '-f', '-'], nodePortScript(cfg));
    // Removing fails only where there is nothing to remove (no nf_tables, as with external SNAT).
    if (r.code !== 0 && cfg.enabled) {
      throw new DataplaneError(
        'setupNodePort',
        'nft -f (chain ip vpcnet nodeport)',
        '',
        firstLines(r.stderr),
      );
    }
    const listed = await this.#exec(node, ['ip', '-j', 'rule', 'show']);
    if (listed.code !== 0) {
      throw new DataplaneError('setupNodePort', 'ip rule show', '', firstLines(listed.stderr));
    }
    for (const change of nodePortRuleChanges(parseNodePortRules(listed.stdout), cfg)) {
      const c = await this.#exec(node, ['ip', ...change]);
      if (c.code !== 0) {
        throw new DataplaneError('setupNodePort', `ip ${change.join(' ')}`, '', firstLines(c.stderr));
      }
    }
  }
}
