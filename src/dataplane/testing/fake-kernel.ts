// An in-memory kernel for unit tests. It applies the same primitive operations the Linux driver
// sends to ip and nft, with the kernel's answers where vpcnet depends on them: adding what exists
// fails ("File exists"), deleting what is gone fails with a "gone" answer, deleting a veth end
// deletes its peer and everything on both, a downed link loses its routes, a deleted namespace
// takes its veths with it. Its views are rendered as the `ip -j` fields the kinds judge.
import type { KernelOp } from '../../plan/kernel-op.ts';
import type { NodeView, PodView } from '../../plan/views.ts';
import type {
  AwsNodeFirewallRemoval,
  EgressSnatConfig,
  Kernel,
  Namespace,
  NodeNetworkConfig,
  NodePortConfig,
  PodScope,
  RunFailure,
  RunResult,
  V4EgressConfig,
} from '../kernel.ts';
import { withinScope } from '../pod-scope.ts';
import { applyToNamespace, deleteAddressIn, EXISTS, linkOf, OpError } from './fake-addressing.ts';
import {
  emptyNamespace,
  type FakeLink,
  type FakeNamespace,
  type FakeRule,
  norm,
  renderView,
  sameRule,
} from './fake-namespace.ts';

export type { FakeLink, FakeNamespace, FakeNeighbour, FakeRoute, FakeRule } from './fake-namespace.ts';

type OpFilter = (op: KernelOp, ns: string) => boolean;

export class FakeKernel implements Kernel {
  readonly namespaces = new Map<string, FakeNamespace>([['node', emptyNamespace()]]);
  /** undefined until setupSnat: the SNAT set does not exist yet. */
  snatSet: Set<string> | undefined;
  snatConfig: NodeNetworkConfig | undefined;
  /** The last NodePort setup, undefined before the first. */
  nodePortConfig: NodePortConfig | undefined;
  /** The IPv4 egress SNAT of IPv6 pods, as last set up (undefined: none). */
  v4EgressConfig: V4EgressConfig | undefined;
  /** The IPv6 egress SNAT of IPv4 pods, as last set up (undefined: none). */
  v6EgressConfig: EgressSnatConfig | undefined;
  /** The node's sysctls as readNodeSysctl reads them (IPv6 forwarding on, as a dual-stack node has it). */
  readonly sysctls = new Map<string, string>([['net.ipv6.conf.all.forwarding', '1']]);
  /** Every operation run, in order, with its namespace ('node' or the pod's path). */
  readonly ops: { readonly ns: string; readonly op: KernelOp }[] = [];
  /** Reads of the node and of pods. */
  reads = { node: 0, pod: 0 };
  readonly #deleted = new Set<string>();
  readonly #failures: { filter: OpFilter; message: string }[] = [];
  #macCounter = 0;

  // --- failure injection and drift "by hand" ---------------------------------------------------

  /** The next operation that matches fails once with this kernel message (nothing applied). */
  failNext(match: KernelOp['op'] | OpFilter, message = 'injected failure'): void {
    const filter: OpFilter = typeof match === 'string' ? (op) => op.op === match : match;
    this.#failures.push({ filter, message });
  }

  /** A namespace (created empty on first use, as a runtime would have made it). */
  ns(name = 'node'): FakeNamespace {
    let ns = this.namespaces.get(name);
    if (!ns) {
      ns = emptyNamespace();
      this.namespaces.set(name, ns);
    }
    return ns;
  }

  link(name: string, ns = 'node'): FakeLink | undefined {
    return this.namespaces.get(ns)?.links.get(name);
  }

  /** Plants a link vpcnet did not make (an ENI the cloud attached, someone's device). */
  addLink(
    name: string,
    mac: string,
    opts: { ns?: string; kind?: string; up?: boolean; mtu?: number } = {},
  ): FakeLink {
    const link: FakeLink = {
      name,
      mac: mac.toLowerCase(),
      up: opts.up ?? false,
      mtu: opts.mtu ?? 1500,
      kind: opts.kind ?? 'device',
      addresses: new Set(),
    };
    this.ns(opts.ns).links.set(name, link);
    return link;
  }

  /** The pod's namespace disappears; the kernel destroys the veths that had an end in it. */
  deleteNetns(path: string): void {
    const ns = this.namespaces.get(path);
    for (const name of [...(ns?.links.keys() ?? [])]) this.#deleteLink(path, name);
    this.namespaces.delete(path);
    this.#deleted.add(path);
  }

  deleteLink(name: string, ns = 'node'): void {
    this.#deleteLink(ns, name);
  }

  /** An admin-down link loses its routes, as in the kernel. */
  setLinkDown(name: string, ns = 'node'): void {
    const link = this.link(name, ns);
    if (!link) return;
    link.up = false;
    const space = this.ns(ns);
    space.routes = space.routes.filter((r) => r.dev !== name);
  }

  /** Removing an interface's last IPv4 address flushes its routes and neighbours, as in the kernel. */
  deleteAddress(ns: string, dev: string, cidr: string): void {
    const space = this.namespaces.get(ns);
    if (space) deleteAddressIn(space, dev, cidr);
  }

  deleteRoute(ns: string, dst: string, table = 254): void {
    const space = this.ns(ns);
    space.routes = space.routes.filter((r) => !(r.table === table && r.dst === norm(dst)));
  }

  addRule(rule: FakeRule): void {
    this.ns().rules.push(rule);
  }

  deleteRule(rule: FakeRule): void {
    const space = this.ns();
    space.rules = space.rules.filter((r) => !sameRule(r, rule));
  }

  deleteNeighbour(ns: string, dev: string, ip: string): void {
    const space = this.ns(ns);
    space.neighbours = space.neighbours.filter((n) => !(n.dev === dev && n.ip === ip));
  }

  deleteSnatElement(ip: string): void {
    this.snatSet?.delete(ip);
  }

  snatElements(): string[] {
    return [...(this.snatSet ?? [])].sort();
  }

  /** Names of the veths on the node, in creation order. */
  veths(): string[] {
    return [...this.ns().links.values()].filter((l) => l.kind === 'veth').map((l) => l.name);
  }

  /** The device of the node's main-table host route to `ip`, if any. */
  hostRoute(ip: string): string | undefined {
    return this.ns().routes.find((r) => r.table === 254 && r.dst === `${ip}/32`)?.dev;
  }

  /** Everything a pod plan leaves on the node (veths, host routes, pod-priority rules, SNAT elements). */
  podResidue(): string[] {
    const node = this.ns();
    const veths = this.veths();
    return [
      ...veths.map((v) => `veth ${v}`),
      ...node.routes.filter((r) => veths.includes(r.dev)).map((r) => `route ${r.dst} dev ${r.dev}`),
      ...node.rules
        .filter((r) => r.priority === 512 || r.priority === 1536)
        .map((r) => `rule ${r.priority} ${r.from ?? r.to ?? ''} ${r.table}`),
      ...this.snatElements().map((ip) => `snat ${ip}`),
    ];
  }

  // --- Kernel ----------------------------------------------------------------------------------

  async run(ns: Namespace, ops: readonly KernelOp[], mode: 'stop' | 'all'): Promise<RunResult> {
    const name = ns.side === 'node' ? 'node' : ns.path;
    if (this.#deleted.has(name)) {
      return { entered: false, reason: `nsenter: cannot open ${name}: No such file or directory` };
    }
    const failures: RunFailure[] = [];
    for (const [index, op] of ops.entries()) {
      this.ops.push({ ns: name, op });
      try {
        this.#inject(op, name);
        this.#apply(name, op);
      } catch (err) {
        if (!(err instanceof OpError)) throw err;
        failures.push({ index, message: err.message });
        if (mode === 'stop') break;
      }
    }
    return { entered: true, failures };
  }

  async readNode(): Promise<NodeView> {
    this.reads.node++;
    return {
      ...renderView(this.ns('node')),
      neighbours: [],
      snatElements: this.snatSet && [...this.snatSet],
    };
  }

  /** Within `scope` as the netlink helper reads it, so the fake judges what the real driver does. */
  async readPod(path: string, scope?: PodScope): Promise<PodView> {
    this.reads.pod++;
    if (this.#deleted.has(path)) return { reachable: false, reason: 'No such file or directory' };
    const view = renderView(this.ns(path));
    return { reachable: true, ...(scope === undefined ? view : withinScope(view, scope)) };
  }

  async setupSnat(cfg: NodeNetworkConfig): Promise<void> {
    this.#inject({ op: 'snatAdd', ip: '0.0.0.0' }, 'setupSnat');
    this.snatConfig = { ...cfg, vpcCidrs: [...cfg.vpcCidrs] };
    this.snatSet ??= new Set();
  }

  async setupNodePort(cfg: NodePortConfig): Promise<void> {
    this.nodePortConfig = { ...cfg, podLinkPrefixes: [...cfg.podLinkPrefixes] };
  }

  async setupV4Egress(cfg: V4EgressConfig | undefined): Promise<void> {
    this.#inject({ op: 'snatAdd', ip: '0.0.0.0' }, 'setupV4Egress');
    this.v4EgressConfig = cfg;
  }

  /** What aws-node left in the node's firewall, one line each (removeAwsNodeFirewall empties it). */
  readonly awsNodeFirewall: string[] = [];

  async removeAwsNodeFirewall(): Promise<AwsNodeFirewallRemoval> {
    const removed = this.awsNodeFirewall.splice(0);
    return { removed, problems: [] };
  }

  async setupV6Egress(cfg: EgressSnatConfig | undefined): Promise<void> {
    this.#inject({ op: 'snatAdd', ip: '0.0.0.0' }, 'setupV6Egress');
    this.v6EgressConfig = cfg;
  }

  async readNodeSysctl(name: string): Promise<string> {
    const value = this.sysctls.get(name);
    if (value === undefined) throw new Error(`sysctl: cannot stat /proc/sys/${name.replaceAll('.', '/')}`);
    return value;
  }

  // --- the model --------------------------------------------------------------------------------

  #inject(op: KernelOp, ns: string): void {
    const i = this.#failures.findIndex((f) => f.filter(op, ns));
    if (i < 0) return;
    const [f] = this.#failures.splice(i, 1);
    throw new OpError(f?.message ?? 'injected failure');
  }

  #apply(ns: string, op: KernelOp): void {
    const space = this.ns(ns);
    switch (op.op) {
      case 'vethAdd': {
        const node = this.ns('node');
        if (space.links.has(op.name) || node.links.has(op.peer)) throw new OpError(EXISTS);
        const base = { up: false, mtu: op.mtu, kind: 'veth', addresses: new Set<string>() };
        space.links.set(op.name, {
          ...base,
          name: op.name,
          mac: op.mac ?? this.#nextMac(),
          peer: { ns: 'node', name: op.peer },
        });
        node.links.set(op.peer, {
          ...base,
          addresses: new Set(),
          name: op.peer,
          mac: op.peerMac,
          peer: { ns, name: op.name },
        });
        return;
      }
      case 'trunkDeviceAdd': {
        const parent = linkOf(space, op.parent);
        if (space.links.has(op.name)) throw new OpError(EXISTS);
        // The kernel allows one VLAN device per ID on a link.
        const sameVlan = [...space.links.values()].some(
          (l) => l.kind === 'vlan' && l.parent === op.parent && l.vlanId === op.vlanId,
        );
        if (op.driver === 'vlan' && sameVlan) throw new OpError(EXISTS);
        // Neither driver takes an MTU above its parent's (a trunk not yet at its ENI's MTU).
        if (op.mtu > parent.mtu) throw new OpError('RTNETLINK answers: Invalid argument');
        space.links.set(op.name, {
          name: op.name,
          mac: op.mac,
          up: false,
          mtu: op.mtu,
          kind: op.driver,
          addresses: new Set(),
          parent: op.parent,
          ...(op.driver === 'vlan' ? { vlanId: op.vlanId } : {}),
        });
        return;
      }
      case 'linkUp': {
        const link = linkOf(space, op.dev);
        link.up = true;
        if (op.mtu !== undefined) link.mtu = op.mtu;
        return;
      }
      case 'linkDel':
        linkOf(space, op.dev);
        this.#deleteLink(ns, op.dev);
        return;
      case 'snatAdd':
      case 'snatDel':
        if (!this.snatSet) throw new OpError('Error: Could not process rule: No such file or directory');
        if (op.op === 'snatAdd') this.snatSet.add(op.ip);
        else this.snatSet.delete(op.ip);
        return;
      default:
        applyToNamespace(space, op);
    }
  }

  #deleteLink(ns: string, name: string): void {
    const space = this.namespaces.get(ns);
    const link = space?.links.get(name);
    if (!space || !link) return;
    space.links.delete(name);
    space.routes = space.routes.filter((r) => r.dev !== name);
    space.neighbours = space.neighbours.filter((n) => n.dev !== name);
    if (link.peer) this.#deleteLink(link.peer.ns, link.peer.name);
    for (const child of [...space.links.values()])
      if (child.parent === name) this.#deleteLink(ns, child.name);
  }

  #nextMac(): string {
    const n = ++this.#macCounter;
    return `0a:58:00:00:${((n >> 8) & 0xff).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`;
  }
}
