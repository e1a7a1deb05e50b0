// The real kernel driver. Budget: a handful of processes per pod operation, never one per route or
// rule: one `ip -batch` inside the pod's namespace, one `ip -batch` on the node, one `nft -f`.
import type { OwnedResource } from '../ledger/attachment.ts';
import { type CommandResult, type CommandRunner, spawnRunner } from './command.ts';
import {
  type AddPodResult,
  type Dataplane,
  type Drift,
  type EniLinkSpec,
  type HostSidePiece,
  MAIN_TABLE,
  type NodeNetworkConfig,
  type NodeObservation,
  POD_GATEWAY,
  type PodNetworkSpec,
  type PodSideObservation,
  RULE_PRIORITY_FROM_POD,
  RULE_PRIORITY_TO_POD,
} from './dataplane.ts';
import { DataplaneError } from './errors.ts';
import { hostSideDrift, podSideDrift, snatDrift } from './inspect.ts';
import { batchOutputs, isAlreadyGone, parseBatchFailures } from './ip-batch.ts';
import { parseLinks, parseNeighbours, parseRoutes, parseRules, ruleSelects } from './ip-json.ts';
import {
  addSnatScript,
  assertIpv4,
  assertIpv4Cidr,
  listSnatSetArgv,
  parseSnatElements,
  removeSnatScript,
  setupNodeScript,
} from './snat.ts';

export interface LinuxDataplaneDeps {
  readonly runner?: CommandRunner;
  /**
   * Path of the node's network namespace. Unset (production): the agent's own namespace, commands
   * run directly. Set (tests, lab): node-side commands run under `nsenter --net=<path>`.
   */
  readonly hostNetns?: string;
  /** Pid whose namespace receives host veths when hostNetns is unset; default: this process. */
  readonly agentPid?: number;
}

const LINK_NAME = /^[^\s/:]{1,15}$/;
const MAC = /^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/;

/** Names and numbers go into batch scripts: refuse anything that could be a second command. */
function assertLinkName(name: string): void {
  if (!LINK_NAME.test(name) || name === '.' || name === '..') {
    throw new Error(`invalid link name ${JSON.stringify(name)}`);
  }
}

function assertUint(what: string, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`invalid ${what} ${n}`);
}

function withPrefixLength(ip: string): string {
  const cidr = ip.includes('/') ? ip : `${ip}/32`;
  assertIpv4Cidr(cidr);
  return cidr;
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join('; ') || 'no message';
}

export class LinuxDataplane implements Dataplane {
  readonly #runner: CommandRunner;
  readonly #hostPrefix: readonly string[];
  /** Where the host end of a pod's veth is created, as seen from inside the pod's namespace. */
  readonly #peerNetns: string;
  #commands = 0;

  constructor(deps: LinuxDataplaneDeps = {}) {
    this.#runner = deps.runner ?? spawnRunner;
    this.#hostPrefix = deps.hostNetns === undefined ? [] : ['nsenter', `--net=${deps.hostNetns}`];
    // nsenter --net changes only the network namespace, so /proc still shows the agent's pid.
    this.#peerNetns = deps.hostNetns ?? `/proc/${deps.agentPid ?? process.pid}/ns/net`;
  }

  /** Processes spawned so far (for measuring the per-operation budget). */
  get commandsRun(): number {
    return this.#commands;
  }

  #run(argv: readonly string[], stdin?: string): Promise<CommandResult> {
    this.#commands++;
    return this.#runner(argv, stdin);
  }

  #host(argv: readonly string[], stdin?: string): Promise<CommandResult> {
    return this.#run([...this.#hostPrefix, ...argv], stdin);
  }

  #inPod(netnsPath: string, argv: readonly string[], stdin?: string): Promise<CommandResult> {
    return this.#run(['nsenter', `--net=${netnsPath}`, ...argv], stdin);
  }

  async setupNode(cfg: NodeNetworkConfig): Promise<void> {
    const r = await this.#host(['nft', '-f', '-'], setupNodeScript(cfg));
    if (r.code !== 0) {
      throw new DataplaneError('setupNode', 'nft -f (table ip vpcnet)', '', firstLines(r.stderr));
    }
  }

  async setupEni(spec: EniLinkSpec): Promise<string> {
    assertIpv4(spec.primaryIp);
    assertIpv4(spec.gateway);
    assertUint('route table', spec.routeTable);
    assertUint('mtu', spec.mtu);
    const read = await this.#host(['ip', '-j', '-batch', '-'], 'link show\nrule show\n');
    if (read.code !== 0)
      throw new DataplaneError('setupEni', 'link show; rule show', '', firstLines(read.stderr));
    const outputs = batchOutputs(read.stdout, read.stderr, [1, 2]);
    const mac = spec.mac.toLowerCase();
    const link = parseLinks(outputs.get(1)).find((l) => l.address === mac);
    if (!link) throw new Error(`setupEni: no link has MAC ${mac} (ENI device ${spec.deviceNumber})`);
    const dev = link.ifname;
    assertLinkName(dev);
    const lines = [`link set ${dev} mtu ${spec.mtu} up`];
    // The primary ENI (main table) is configured by the OS; only secondary ENIs get our table.
    if (spec.routeTable !== MAIN_TABLE) {
      const t = spec.routeTable;
      lines.push(
        `addr replace ${spec.primaryIp}/32 dev ${dev}`,
        `route replace ${spec.gateway} dev ${dev} scope link table ${t}`,
        `route replace default via ${spec.gateway} dev ${dev} table ${t}`,
      );
      const hasRule = parseRules(outputs.get(2)).some(
        (r) =>
          r.priority === RULE_PRIORITY_FROM_POD && r.table === t && ruleSelects(r, 'src', spec.primaryIp),
      );
      // `ip rule add` of an existing rule fails (EEXIST), and there is no `rule replace`.
      if (!hasRule)
        lines.push(`rule add from ${spec.primaryIp}/32 lookup ${t} prio ${RULE_PRIORITY_FROM_POD}`);
    }
    const r = await this.#host(['ip', '-batch', '-'], `${lines.join('\n')}\n`);
    if (r.code !== 0) {
      const f = parseBatchFailures(r.stderr)[0];
      throw new DataplaneError(
        'setupEni',
        f ? (lines[f.line - 1] ?? '?') : 'ip -batch',
        dev,
        f?.message ?? firstLines(r.stderr),
      );
    }
    return dev;
  }

  async teardownEni(spec: EniLinkSpec): Promise<void> {
    assertIpv4(spec.primaryIp);
    assertUint('route table', spec.routeTable);
    // The primary ENI is the node's own interface: its main table is never flushed.
    if (spec.routeTable === MAIN_TABLE || spec.deviceNumber === 0) {
      throw new Error(`teardownEni: refusing to tear down ENI device ${spec.deviceNumber} (main table)`);
    }
    const read = await this.#host(['ip', '-j', '-batch', '-'], 'addr show\n');
    if (read.code !== 0) throw new DataplaneError('teardownEni', 'addr show', '', firstLines(read.stderr));
    const mac = spec.mac.toLowerCase();
    const link = parseLinks(batchOutputs(read.stdout, read.stderr, [1]).get(1)).find(
      (l) => l.address === mac,
    );
    const t = spec.routeTable;
    // Exactly what setupEni made: its table's routes, its rule, its address (ownership).
    const lines = [
      `route flush table ${t}`,
      `rule del from ${spec.primaryIp}/32 lookup ${t} prio ${RULE_PRIORITY_FROM_POD}`,
    ];
    const dev = link?.ifname ?? '';
    // A link already gone (ENI detached) took its address with it.
    if (
      link?.addresses.some((a) => a.family === 'inet' && a.local === spec.primaryIp && a.prefixlen === 32)
    ) {
      assertLinkName(dev);
      lines.push(`addr del ${spec.primaryIp}/32 dev ${dev}`);
    }
    const r = await this.#host(['ip', '-force', '-batch', '-'], `${lines.join('\n')}\n`);
    if (r.code === 0) return;
    const failures = parseBatchFailures(r.stderr);
    if (failures.length === 0)
      throw new DataplaneError('teardownEni', 'ip -force -batch', dev, firstLines(r.stderr));
    const [first, ...rest] = failures.filter((f) => !isAlreadyGone(f.message));
    if (first) {
      const also = rest.map((f) => `; also "${lines[f.line - 1] ?? '?'}": ${f.message}`).join('');
      throw new DataplaneError('teardownEni', lines[first.line - 1] ?? '?', dev, first.message + also);
    }
  }

  async addPod(spec: PodNetworkSpec): Promise<AddPodResult> {
    const { ifName, hostVeth, hostMac, ip, mtu } = spec;
    assertLinkName(ifName);
    assertLinkName(hostVeth);
    assertIpv4(ip);
    assertUint('mtu', mtu);
    assertUint('route table', spec.routeTable);
    if (!MAC.test(hostMac)) throw new Error(`invalid host MAC ${JSON.stringify(hostMac)}`);

    // Host-side `ip -batch` lines that undo what has been done so far, in the order done.
    const undo: string[] = [];
    const fail = async (step: string, message: string): Promise<never> => {
      const leftover = await this.#rollback(undo);
      const suffix = leftover === '' ? '' : ` (rollback incomplete: ${leftover})`;
      throw new DataplaneError('addPod', step, hostVeth, message + suffix);
    };

    // Pod side. The veth's host end is created directly in the node's namespace: no link move.
    const podLines = [
      `link add ${ifName} mtu ${mtu} type veth peer name ${hostVeth} mtu ${mtu} address ${hostMac} netns ${this.#peerNetns}`,
      `addr add ${ip}/32 dev ${ifName}`,
      `link set ${ifName} up`,
      `route add ${POD_GATEWAY} dev ${ifName} scope link`,
      `route add default via ${POD_GATEWAY} dev ${ifName}`,
      `neigh add ${POD_GATEWAY} dev ${ifName} lladdr ${hostMac} nud permanent`,
      `link show dev ${ifName}`,
    ];
    const pod = await this.#inPod(spec.netnsPath, ['ip', '-j', '-batch', '-'], `${podLines.join('\n')}\n`);
    if (pod.code !== 0) {
      const f = parseBatchFailures(pod.stderr)[0];
      // Line 1 failing means no veth was made (or one exists that is not ours to delete: ownership).
      if (f && f.line > 1) undo.push(`link del ${hostVeth}`);
      return fail(
        f ? (podLines[f.line - 1] ?? '?') : `nsenter --net=${spec.netnsPath}`,
        f?.message ?? firstLines(pod.stderr),
      );
    }
    // Deleting the host end deletes the pod end, its address, routes and neighbour with it.
    undo.push(`link del ${hostVeth}`);
    const podMac = parseLinks(batchOutputs(pod.stdout, pod.stderr, [podLines.length]).get(podLines.length))[0]
      ?.address;
    if (podMac === undefined) return fail(`link show dev ${ifName}`, 'no JSON output');

    const resources: OwnedResource[] = [{ kind: 'veth', hostName: hostVeth }];
    const hostSteps: { line: string; undo?: string; resource: OwnedResource | undefined }[] = [
      { line: `link set ${hostVeth} up`, resource: undefined },
      {
        line: `route add ${ip}/32 dev ${hostVeth} scope link`,
        resource: { kind: 'hostRoute', dst: `${ip}/32`, dev: hostVeth },
      },
      {
        line: `rule add to ${ip}/32 lookup main prio ${RULE_PRIORITY_TO_POD}`,
        undo: `rule del to ${ip}/32 lookup main prio ${RULE_PRIORITY_TO_POD}`,
        resource: { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: `${ip}/32`, table: MAIN_TABLE },
      },
    ];
    if (spec.routeTable !== MAIN_TABLE) {
      const t = spec.routeTable;
      hostSteps.push({
        line: `rule add from ${ip}/32 lookup ${t} prio ${RULE_PRIORITY_FROM_POD}`,
        undo: `rule del from ${ip}/32 lookup ${t} prio ${RULE_PRIORITY_FROM_POD}`,
        resource: { kind: 'rule', priority: RULE_PRIORITY_FROM_POD, from: `${ip}/32`, table: t },
      });
    }
    const host = await this.#host(['ip', '-batch', '-'], `${hostSteps.map((s) => s.line).join('\n')}\n`);
    const failure = host.code === 0 ? undefined : parseBatchFailures(host.stderr)[0];
    // Without a failing line (nsenter itself failed) nothing is known to be done; undo all, tolerantly.
    const doneCount = host.code === 0 ? hostSteps.length : failure ? failure.line - 1 : hostSteps.length;
    for (const s of hostSteps.slice(0, doneCount)) {
      if (s.undo) undo.push(s.undo);
      if (s.resource) resources.push(s.resource);
    }
    if (host.code !== 0) {
      const step = failure ? (hostSteps[failure.line - 1]?.line ?? '?') : 'ip -batch (node side)';
      return fail(step, failure?.message ?? firstLines(host.stderr));
    }

    if (spec.snat) {
      const r = await this.#host(['nft', '-f', '-'], addSnatScript([ip]));
      if (r.code !== 0) return fail(`nft add element ip vpcnet snat_pods { ${ip} }`, firstLines(r.stderr));
      resources.push({ kind: 'snat', ip });
    }
    return { resources, podInterface: { mac: podMac } };
  }

  /** Runs undo lines newest first; returns what could not be undone ('' if all is gone). */
  async #rollback(undo: readonly string[]): Promise<string> {
    if (undo.length === 0) return '';
    const lines = [...undo].reverse();
    const r = await this.#host(['ip', '-force', '-batch', '-'], `${lines.join('\n')}\n`);
    if (r.code === 0) return '';
    const failures = parseBatchFailures(r.stderr);
    if (failures.length === 0) return firstLines(r.stderr);
    return failures
      .filter((f) => !isAlreadyGone(f.message))
      .map((f) => `${lines[f.line - 1] ?? '?'}: ${f.message}`)
      .join('; ');
  }

  async removeResources(resources: readonly OwnedResource[]): Promise<void> {
    // Ownership: remove exactly the listed resources, never anything found by a name pattern.
    // Order: rules, routes, then veths (deleting a veth takes its routes, not its rules).
    const rules: string[] = [];
    const routes: string[] = [];
    const veths: string[] = [];
    const snat: string[] = [];
    for (const r of resources) {
      switch (r.kind) {
        case 'rule': {
          assertUint('rule priority', r.priority);
          assertUint('route table', r.table);
          const from = r.from === undefined ? '' : ` from ${withPrefixLength(r.from)}`;
          const to = r.to === undefined ? '' : ` to ${withPrefixLength(r.to)}`;
          rules.push(`rule del${from}${to} lookup ${r.table} prio ${r.priority}`);
          break;
        }
        case 'hostRoute':
          assertLinkName(r.dev);
          routes.push(`route del ${withPrefixLength(r.dst)} dev ${r.dev}`);
          break;
        case 'veth':
          assertLinkName(r.hostName);
          veths.push(`link del ${r.hostName}`);
          break;
        case 'snat':
          assertIpv4(r.ip);
          snat.push(r.ip);
          break;
        case 'address':
          // A VPC address is a cloud resource: IPAM releases it, not the kernel driver.
          break;
      }
    }
    const subject = resources.find((r) => r.kind === 'veth')?.hostName ?? '';
    const lines = [...rules, ...routes, ...veths];
    const errors: { step: string; message: string }[] = [];
    const [ipResult, nftResult] = await Promise.all([
      lines.length > 0 ? this.#host(['ip', '-force', '-batch', '-'], `${lines.join('\n')}\n`) : undefined,
      snat.length > 0 ? this.#host(['nft', '-f', '-'], removeSnatScript(snat)) : undefined,
    ]);
    if (ipResult && ipResult.code !== 0) {
      const failures = parseBatchFailures(ipResult.stderr);
      if (failures.length === 0)
        errors.push({ step: 'ip -force -batch', message: firstLines(ipResult.stderr) });
      for (const f of failures) {
        // DEL of something already gone succeeds (DESIGN.md rule 5), e.g. after the netns vanished.
        if (!isAlreadyGone(f.message)) errors.push({ step: lines[f.line - 1] ?? '?', message: f.message });
      }
    }
    // nft reports a missing table or set as ENOENT: then no element can be present either.
    if (nftResult && nftResult.code !== 0 && !isAlreadyGone(nftResult.stderr)) {
      errors.push({
        step: `nft delete element ip vpcnet snat_pods { ${snat.join(', ')} }`,
        message: firstLines(nftResult.stderr),
      });
    }
    const [first, ...rest] = errors;
    if (first) {
      const also = rest.map((e) => `; also "${e.step}": ${e.message}`).join('');
      throw new DataplaneError('removeResources', first.step, subject, first.message + also);
    }
  }

  async inspectPod(spec: PodNetworkSpec): Promise<string[]> {
    const [pod, host] = await Promise.all([
      this.#readPodSide(spec),
      this.#readHostSide(spec, 'inspectPod').catch((err: unknown) => {
        if (!(err instanceof DataplaneError)) throw err;
        return [{ piece: 'veth' as const, problem: `node netns unreachable: ${err.kernelMessage}` }];
      }),
    ]);
    return [
      ...(pod.reachable
        ? pod.drift.map((d) => d.problem)
        : [`pod netns ${spec.netnsPath} unreachable: ${pod.reason}`]),
      ...host.map((d) => d.problem),
    ];
  }

  /** One `ip -j -force -batch` inside the pod's namespace; its failure to enter is an answer, not an error. */
  async #readPodSide(spec: PodNetworkSpec): Promise<PodSideObservation> {
    const { ifName, hostVeth, ip } = spec;
    assertLinkName(ifName);
    assertLinkName(hostVeth);
    assertIpv4(ip);
    const podScript = [
      `addr show dev ${ifName}`,
      'route show default',
      `route show ${POD_GATEWAY}`,
      `neigh show ${POD_GATEWAY} dev ${ifName}`,
    ];
    const pod = await this.#inPod(
      spec.netnsPath,
      ['ip', '-j', '-force', '-batch', '-'],
      `${podScript.join('\n')}\n`,
    );
    if (pod.code !== 0 && parseBatchFailures(pod.stderr).length === 0) {
      return { reachable: false, reason: firstLines(pod.stderr) };
    }
    const out = batchOutputs(pod.stdout, pod.stderr, [1, 2, 3, 4]);
    return {
      reachable: true,
      drift: podSideDrift(spec, {
        link: parseLinks(out.get(1))[0],
        defaultRoutes: parseRoutes(out.get(2)),
        gatewayRoutes: parseRoutes(out.get(3)),
        neighbours: parseNeighbours(out.get(4)),
      }),
    };
  }

  /** The node side of one pod (one `ip -j -force -batch`, plus `nft -j` when it is SNATed). */
  async #readHostSide(spec: PodNetworkSpec, operation: string): Promise<Drift<HostSidePiece>[]> {
    const { hostVeth, ip } = spec;
    assertLinkName(hostVeth);
    assertIpv4(ip);
    const hostScript = [`link show dev ${hostVeth}`, `route show table main ${ip}/32`, 'rule show'];
    const [host, nft] = await Promise.all([
      this.#host(['ip', '-j', '-force', '-batch', '-'], `${hostScript.join('\n')}\n`),
      spec.snat ? this.#host(listSnatSetArgv()) : undefined,
    ]);
    if (host.code !== 0 && parseBatchFailures(host.stderr).length === 0) {
      throw new DataplaneError(operation, 'ip -j -batch (node side)', hostVeth, firstLines(host.stderr));
    }
    const out = batchOutputs(host.stdout, host.stderr, [1, 2, 3]);
    return [
      ...hostSideDrift(spec, {
        link: parseLinks(out.get(1))[0],
        routes: parseRoutes(out.get(2)),
        rules: parseRules(out.get(3)),
      }),
      ...(nft ? snatDrift(spec, nft.code === 0 ? parseSnatElements(nft.stdout) : undefined) : []),
    ];
  }

  async observeNode(): Promise<NodeObservation> {
    const script = 'link show type veth\nroute show table main\nrule show\n';
    const [ip, nft] = await Promise.all([
      this.#host(['ip', '-j', '-batch', '-'], script),
      this.#host(listSnatSetArgv()),
    ]);
    if (ip.code !== 0) {
      const f = parseBatchFailures(ip.stderr)[0];
      const step = f ? (script.split('\n')[f.line - 1] ?? '?') : 'ip -j -batch';
      throw new DataplaneError('observeNode', step, '', f?.message ?? firstLines(ip.stderr));
    }
    // nft says ENOENT when the table or set does not exist (setupNode not run): no elements then.
    if (nft.code !== 0 && !isAlreadyGone(nft.stderr)) {
      throw new DataplaneError('observeNode', listSnatSetArgv().join(' '), '', firstLines(nft.stderr));
    }
    const out = batchOutputs(ip.stdout, ip.stderr, [1, 2, 3]);
    return {
      veths: parseLinks(out.get(1)),
      routes: parseRoutes(out.get(2)),
      rules: parseRules(out.get(3)),
      snatElements: nft.code === 0 ? parseSnatElements(nft.stdout) : undefined,
    };
  }

  observePodSide(spec: PodNetworkSpec): Promise<PodSideObservation> {
    return this.#readPodSide(spec);
  }

  async repairHostSide(spec: PodNetworkSpec): Promise<string[]> {
    const { hostVeth, ip } = spec;
    assertUint('route table', spec.routeTable);
    const drift = await this.#readHostSide(spec, 'repairHostSide');
    const missing = new Set(drift.map((d) => d.piece));
    if (missing.has('veth')) {
      throw new DataplaneError('repairHostSide', `link show dev ${hostVeth}`, hostVeth, 'host veth missing');
    }
    // In this order: a route through a down link is refused, and `up` does not bring routes back.
    const lines: string[] = [];
    if (missing.has('vethUp')) lines.push(`link set ${hostVeth} up`);
    if (missing.has('hostRoute')) lines.push(`route replace ${ip}/32 dev ${hostVeth} scope link`);
    if (missing.has('ruleTo')) lines.push(`rule add to ${ip}/32 lookup main prio ${RULE_PRIORITY_TO_POD}`);
    if (missing.has('ruleFrom')) {
      lines.push(`rule add from ${ip}/32 lookup ${spec.routeTable} prio ${RULE_PRIORITY_FROM_POD}`);
    }
    const [ipResult, nftResult] = await Promise.all([
      lines.length > 0 ? this.#host(['ip', '-batch', '-'], `${lines.join('\n')}\n`) : undefined,
      missing.has('snat') ? this.#host(['nft', '-f', '-'], addSnatScript([ip])) : undefined,
    ]);
    if (ipResult && ipResult.code !== 0) {
      const f = parseBatchFailures(ipResult.stderr)[0];
      const step = f ? (lines[f.line - 1] ?? '?') : 'ip -batch (node side)';
      throw new DataplaneError('repairHostSide', step, hostVeth, f?.message ?? firstLines(ipResult.stderr));
    }
    if (nftResult && nftResult.code !== 0) {
      throw new DataplaneError(
        'repairHostSide',
        `nft add element ip vpcnet snat_pods { ${ip} }`,
        hostVeth,
        firstLines(nftResult.stderr),
      );
    }
    return drift.map((d) => d.problem);
  }

  async repairPodSide(spec: PodNetworkSpec): Promise<string[]> {
    const { ifName, hostVeth, hostMac, ip } = spec;
    if (!MAC.test(hostMac)) throw new Error(`invalid host MAC ${JSON.stringify(hostMac)}`);
    const pod = await this.#readPodSide(spec);
    if (!pod.reachable) {
      throw new DataplaneError('repairPodSide', `nsenter --net=${spec.netnsPath}`, hostVeth, pod.reason);
    }
    const missing = new Set(pod.drift.map((d) => d.piece));
    if (missing.has('interface')) {
      throw new DataplaneError('repairPodSide', `addr show dev ${ifName}`, hostVeth, 'pod interface missing');
    }
    // `replace`: a wrong neighbour or a stray route of the same key is overwritten, not refused.
    const lines: string[] = [];
    if (missing.has('interfaceUp')) lines.push(`link set ${ifName} up`);
    if (missing.has('address')) lines.push(`addr replace ${ip}/32 dev ${ifName}`);
    if (missing.has('gatewayRoute')) lines.push(`route replace ${POD_GATEWAY} dev ${ifName} scope link`);
    if (missing.has('defaultRoute')) lines.push(`route replace default via ${POD_GATEWAY} dev ${ifName}`);
    if (missing.has('neighbour')) {
      lines.push(`neigh replace ${POD_GATEWAY} dev ${ifName} lladdr ${hostMac} nud permanent`);
    }
    if (lines.length === 0) return [];
    const r = await this.#inPod(spec.netnsPath, ['ip', '-batch', '-'], `${lines.join('\n')}\n`);
    if (r.code !== 0) {
      const f = parseBatchFailures(r.stderr)[0];
      const step = f ? (lines[f.line - 1] ?? '?') : `nsenter --net=${spec.netnsPath}`;
      throw new DataplaneError('repairPodSide', step, hostVeth, f?.message ?? firstLines(r.stderr));
    }
    return pod.drift.map((d) => d.problem);
  }

  async listHostVeths(prefix: string): Promise<string[]> {
    // Only veths: a prefix that happens to match an ENI's name must never offer the ENI for GC.
    const r = await this.#host(['ip', '-j', 'link', 'show', 'type', 'veth']);
    if (r.code !== 0)
      throw new DataplaneError('listHostVeths', 'ip link show type veth', '', firstLines(r.stderr));
    return parseLinks(JSON.parse(r.stdout || '[]'))
      .map((l) => l.ifname)
      .filter((n) => n.startsWith(prefix));
  }
}
