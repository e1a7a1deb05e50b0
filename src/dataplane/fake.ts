// An in-memory kernel for unit tests of the modules above the dataplane. It keeps the same rules
// as the real driver: adding what exists fails, removing what is gone succeeds, a failed addPod
// undoes its own steps only, and the kernel's side effects that matter to vpcnet (a deleted veth
// takes its pod end and routes; a deleted netns takes its veths) are modelled.
import type { OwnedResource } from '../ledger/attachment.ts';
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
import type { IpLink, IpRule } from './ip-json.ts';

/** Where a failure can be injected. */
export type FakeStep =
  | 'podVeth'
  | 'podAddress'
  | 'podRoutes'
  | 'neighbour'
  | 'hostUp'
  | 'hostRoute'
  | 'ruleTo'
  | 'ruleFrom'
  | 'snat'
  | 'removeResources'
  | 'setupNode'
  | 'setupEni'
  | 'teardownEni'
  | 'inspectPod'
  | 'observeNode'
  | 'repairHostSide'
  | 'repairPodSide';

export interface FakePodInterface {
  readonly netnsPath: string;
  readonly ifName: string;
  readonly mac: string;
  readonly mtu: number;
  readonly addresses: Set<string>;
  up: boolean;
  gatewayRoute: boolean;
  defaultRoute: boolean;
  neighbour: { mac: string; permanent: boolean } | undefined;
}

export interface FakeVeth {
  readonly name: string;
  readonly mac: string;
  up: boolean;
  readonly pod: FakePodInterface;
}

export interface FakeRule {
  readonly priority: number;
  readonly from?: string;
  readonly to?: string;
  readonly table: number;
  /** Selectors the model does not have (e.g. ['iif']): a rule someone else made, never vpcnet's. */
  readonly other?: readonly string[];
}

export interface FakeEniLink {
  readonly name: string;
  readonly mac: string;
  up: boolean;
  mtu: number;
  readonly addresses: Set<string>;
  /** table -> route descriptions ("default via G", "G scope link") */
  readonly routes: Map<number, Set<string>>;
}

const sameRule = (a: FakeRule, b: FakeRule) =>
  a.priority === b.priority &&
  a.table === b.table &&
  a.from === b.from &&
  a.to === b.to &&
  (a.other ?? []).join() === (b.other ?? []).join();
const hostRouteKey = (dst: string) => (dst.includes('/') ? dst : `${dst}/32`);

export class FakeDataplane implements Dataplane {
  readonly veths = new Map<string, FakeVeth>();
  /** Host routes: destination (ip/32) -> device. */
  readonly hostRoutes = new Map<string, string>();
  readonly rules: FakeRule[] = [];
  /** undefined until setupNode: the SNAT set does not exist yet. */
  snatSet: Set<string> | undefined;
  nodeConfig: NodeNetworkConfig | undefined;
  readonly eniLinks = new Map<string, FakeEniLink>();
  /** Every call, in order (operation name and its first argument). */
  readonly calls: { op: string; arg: unknown }[] = [];
  readonly #podInterfaces = new Map<string, FakePodInterface>();
  readonly #deletedNetns = new Set<string>();
  readonly #failures = new Map<FakeStep, string>();
  #macCounter = 0;

  /** The next time `step` runs, it fails with this kernel message (once). */
  failNext(step: FakeStep, message = 'injected failure'): void {
    this.#failures.set(step, message);
  }

  #check(op: string, step: FakeStep, subject: string): void {
    const message = this.#failures.get(step);
    if (message === undefined) return;
    this.#failures.delete(step);
    throw new DataplaneError(op, step, subject, message);
  }

  // --- inspection -------------------------------------------------------------------------

  hasPod(hostVeth: string): boolean {
    return this.veths.has(hostVeth);
  }

  podInterface(netnsPath: string, ifName: string): FakePodInterface | undefined {
    return this.#podInterfaces.get(`${netnsPath}\0${ifName}`);
  }

  snatElements(): string[] {
    return [...(this.snatSet ?? [])].sort();
  }

  /** Every pod resource the model holds now, in OwnedResource form (ENI setup excluded). */
  resources(): OwnedResource[] {
    const out: OwnedResource[] = [];
    for (const name of this.veths.keys()) out.push({ kind: 'veth', hostName: name });
    for (const [dst, dev] of this.hostRoutes) out.push({ kind: 'hostRoute', dst, dev });
    for (const r of this.rules) out.push({ kind: 'rule', ...r });
    for (const ip of this.snatSet ?? []) out.push({ kind: 'snat', ip });
    return out;
  }

  // --- drift "by hand" (what an operator or another program might do) --------------------------

  /** The pod's namespace disappears; the kernel destroys the veths that had an end in it. */
  deleteNetns(netnsPath: string): void {
    this.#deletedNetns.add(netnsPath);
    for (const v of [...this.veths.values()]) if (v.pod.netnsPath === netnsPath) this.#deleteVeth(v.name);
  }

  deleteLink(name: string): void {
    this.#deleteVeth(name);
  }

  /** An admin-down link loses its routes, as in the kernel. */
  setLinkDown(name: string): void {
    const v = this.veths.get(name);
    if (!v) return;
    v.up = false;
    for (const [dst, dev] of [...this.hostRoutes]) if (dev === name) this.hostRoutes.delete(dst);
  }

  /** Removing an interface's last address flushes its routes and neighbours, as in the kernel. */
  deletePodAddress(netnsPath: string, ifName: string, ip: string): void {
    const pod = this.podInterface(netnsPath, ifName);
    if (!pod) return;
    pod.addresses.delete(ip);
    if (pod.addresses.size === 0) {
      pod.gatewayRoute = false;
      pod.defaultRoute = false;
      pod.neighbour = undefined;
    }
  }

  deleteHostRoute(dst: string): void {
    this.hostRoutes.delete(hostRouteKey(dst));
  }

  deleteRule(rule: FakeRule): void {
    const i = this.rules.findIndex((r) => sameRule(r, rule));
    if (i >= 0) this.rules.splice(i, 1);
  }

  deleteSnatElement(ip: string): void {
    this.snatSet?.delete(ip);
  }

  /** Plants a link (e.g. an ENI that the cloud attached) for setupEni to find. */
  addEniLink(name: string, mac: string): void {
    this.eniLinks.set(mac.toLowerCase(), {
      name,
      mac: mac.toLowerCase(),
      up: false,
      mtu: 1500,
      addresses: new Set(),
      routes: new Map(),
    });
  }

  #deleteVeth(name: string): void {
    const v = this.veths.get(name);
    if (!v) return;
    this.veths.delete(name);
    this.#podInterfaces.delete(`${v.pod.netnsPath}\0${v.pod.ifName}`);
    for (const [dst, dev] of [...this.hostRoutes]) if (dev === name) this.hostRoutes.delete(dst);
  }

  // --- Dataplane ------------------------------------------------------------------------------

  async setupNode(cfg: NodeNetworkConfig): Promise<void> {
    this.calls.push({ op: 'setupNode', arg: cfg });
    this.#check('setupNode', 'setupNode', '');
    this.nodeConfig = { vpcCidrs: [...cfg.vpcCidrs], snatSource: cfg.snatSource };
    this.snatSet ??= new Set();
  }

  async setupEni(spec: EniLinkSpec): Promise<string> {
    this.calls.push({ op: 'setupEni', arg: spec });
    const link = this.eniLinks.get(spec.mac.toLowerCase());
    if (!link)
      throw new Error(
        `setupEni: no link has MAC ${spec.mac.toLowerCase()} (ENI device ${spec.deviceNumber})`,
      );
    this.#check('setupEni', 'setupEni', link.name);
    link.up = true;
    link.mtu = spec.mtu;
    if (spec.routeTable !== MAIN_TABLE) {
      link.addresses.add(spec.primaryIp);
      link.routes.set(
        spec.routeTable,
        new Set([`${spec.gateway} scope link`, `default via ${spec.gateway}`]),
      );
      const rule = { priority: RULE_PRIORITY_FROM_POD, from: `${spec.primaryIp}/32`, table: spec.routeTable };
      if (!this.rules.some((r) => sameRule(r, rule))) this.rules.push(rule);
    }
    return link.name;
  }

  async teardownEni(spec: EniLinkSpec): Promise<void> {
    this.calls.push({ op: 'teardownEni', arg: spec });
    if (spec.routeTable === MAIN_TABLE || spec.deviceNumber === 0) {
      throw new Error(`teardownEni: refusing to tear down ENI device ${spec.deviceNumber} (main table)`);
    }
    const link = this.eniLinks.get(spec.mac.toLowerCase());
    this.#check('teardownEni', 'teardownEni', link?.name ?? '');
    // Exactly what setupEni made; a link already gone took its address and routes with it.
    link?.addresses.delete(spec.primaryIp);
    link?.routes.delete(spec.routeTable);
    this.deleteRule({
      priority: RULE_PRIORITY_FROM_POD,
      from: `${spec.primaryIp}/32`,
      table: spec.routeTable,
    });
  }

  async addPod(spec: PodNetworkSpec): Promise<AddPodResult> {
    this.calls.push({ op: 'addPod', arg: spec });
    const { hostVeth, ip } = spec;
    const undo: (() => void)[] = [];
    const resources: OwnedResource[] = [];
    const step = (name: FakeStep, action: () => void) => {
      try {
        this.#check('addPod', name, hostVeth);
        action();
      } catch (err) {
        // Undo what this addPod did, newest first; nothing it did not create (ownership).
        for (const u of undo.reverse()) u();
        throw err;
      }
    };
    const exists = (what: string) => {
      throw new DataplaneError('addPod', what, hostVeth, 'RTNETLINK answers: File exists');
    };

    let pod: FakePodInterface | undefined;
    step('podVeth', () => {
      if (this.#deletedNetns.has(spec.netnsPath)) {
        throw new DataplaneError(
          'addPod',
          `nsenter --net=${spec.netnsPath}`,
          hostVeth,
          'No such file or directory',
        );
      }
      if (this.veths.has(hostVeth) || this.podInterface(spec.netnsPath, spec.ifName)) exists('podVeth');
      pod = {
        netnsPath: spec.netnsPath,
        ifName: spec.ifName,
        mac: this.#nextMac(),
        mtu: spec.mtu,
        addresses: new Set(),
        up: false,
        gatewayRoute: false,
        defaultRoute: false,
        neighbour: undefined,
      };
      this.#podInterfaces.set(`${spec.netnsPath}\0${spec.ifName}`, pod);
      this.veths.set(hostVeth, { name: hostVeth, mac: spec.hostMac.toLowerCase(), up: false, pod });
      undo.push(() => this.#deleteVeth(hostVeth));
      resources.push({ kind: 'veth', hostName: hostVeth });
    });
    const p = pod!;
    step('podAddress', () => p.addresses.add(ip));
    step('podRoutes', () => {
      p.up = true;
      p.gatewayRoute = true;
      p.defaultRoute = true;
    });
    step('neighbour', () => {
      p.neighbour = { mac: spec.hostMac.toLowerCase(), permanent: true };
    });
    step('hostUp', () => {
      this.veths.get(hostVeth)!.up = true;
    });
    step('hostRoute', () => {
      const dst = `${ip}/32`;
      if (this.hostRoutes.has(dst)) exists('hostRoute');
      this.hostRoutes.set(dst, hostVeth);
      resources.push({ kind: 'hostRoute', dst, dev: hostVeth });
    });
    const addRule = (name: FakeStep, rule: FakeRule) =>
      step(name, () => {
        if (this.rules.some((r) => sameRule(r, rule))) exists(name);
        this.rules.push(rule);
        undo.push(() => this.deleteRule(rule));
        resources.push({ kind: 'rule', ...rule });
      });
    addRule('ruleTo', { priority: RULE_PRIORITY_TO_POD, to: `${ip}/32`, table: MAIN_TABLE });
    if (spec.routeTable !== MAIN_TABLE) {
      addRule('ruleFrom', { priority: RULE_PRIORITY_FROM_POD, from: `${ip}/32`, table: spec.routeTable });
    }
    if (spec.snat) {
      step('snat', () => {
        if (!this.snatSet) {
          throw new DataplaneError(
            'addPod',
            'snat',
            hostVeth,
            'Error: No such file or directory (setupNode not run)',
          );
        }
        this.snatSet.add(ip);
        resources.push({ kind: 'snat', ip });
      });
    }
    return { resources, podInterface: { mac: p.mac } };
  }

  async removeResources(resources: readonly OwnedResource[]): Promise<void> {
    this.calls.push({ op: 'removeResources', arg: resources });
    const subject = resources.find((r) => r.kind === 'veth')?.hostName ?? '';
    this.#check('removeResources', 'removeResources', subject);
    // Ownership: exactly the listed resources; what is already gone counts as removed.
    for (const r of resources) {
      if (r.kind === 'rule') {
        const { kind: _, ...rule } = r;
        this.deleteRule(rule);
      } else if (r.kind === 'hostRoute') {
        const dst = hostRouteKey(r.dst);
        if (this.hostRoutes.get(dst) === r.dev) this.hostRoutes.delete(dst);
      } else if (r.kind === 'veth') {
        this.#deleteVeth(r.hostName);
      } else if (r.kind === 'snat') {
        this.snatSet?.delete(r.ip);
      }
    }
  }

  async inspectPod(spec: PodNetworkSpec): Promise<string[]> {
    this.calls.push({ op: 'inspectPod', arg: spec });
    this.#check('inspectPod', 'inspectPod', spec.hostVeth);
    // The same wording as the real driver: the model is rendered as `ip -j` views.
    const pod = this.#podSide(spec);
    return [
      ...(pod.reachable
        ? pod.drift.map((d) => d.problem)
        : [`pod netns ${spec.netnsPath} unreachable: ${pod.reason}`]),
      ...this.#hostSide(spec).map((d) => d.problem),
    ];
  }

  #podSide(spec: PodNetworkSpec): PodSideObservation {
    if (this.#deletedNetns.has(spec.netnsPath))
      return { reachable: false, reason: 'No such file or directory' };
    const pod = this.podInterface(spec.netnsPath, spec.ifName);
    return {
      reachable: true,
      drift: podSideDrift(spec, {
        link: pod && {
          ifname: pod.ifName,
          address: pod.mac,
          flags: pod.up ? ['UP'] : [],
          mtu: pod.mtu,
          addresses: [...pod.addresses].map((local) => ({ family: 'inet', local, prefixlen: 32 })),
        },
        defaultRoutes: pod?.defaultRoute ? [{ dst: 'default', gateway: POD_GATEWAY, dev: pod.ifName }] : [],
        gatewayRoutes: pod?.gatewayRoute ? [{ dst: POD_GATEWAY, dev: pod.ifName }] : [],
        neighbours: pod?.neighbour
          ? [
              {
                dst: POD_GATEWAY,
                lladdr: pod.neighbour.mac,
                state: [pod.neighbour.permanent ? 'PERMANENT' : 'REACHABLE'],
              },
            ]
          : [],
      }),
    };
  }

  #hostSide(spec: PodNetworkSpec): Drift<HostSidePiece>[] {
    const veth = this.veths.get(spec.hostVeth);
    const dev = this.hostRoutes.get(`${spec.ip}/32`);
    return [
      ...hostSideDrift(spec, {
        link: veth && this.#linkView(veth),
        routes: dev === undefined ? [] : [{ dst: spec.ip, dev }],
        rules: this.#ruleViews(),
      }),
      ...snatDrift(spec, this.snatSet && [...this.snatSet]),
    ];
  }

  #linkView(veth: FakeVeth): IpLink {
    return {
      ifname: veth.name,
      address: veth.mac,
      flags: veth.up ? ['UP'] : [],
      mtu: veth.pod.mtu,
      addresses: [],
    };
  }

  #ruleViews(): IpRule[] {
    return this.rules.map((r) => ({
      priority: r.priority,
      table: r.table,
      src: r.from?.replace(/\/32$/, '') ?? 'all',
      ...(r.to === undefined ? {} : { dst: r.to.replace(/\/32$/, '') }),
      ...(r.other === undefined ? {} : { other: r.other }),
    }));
  }

  async observeNode(): Promise<NodeObservation> {
    this.calls.push({ op: 'observeNode', arg: undefined });
    this.#check('observeNode', 'observeNode', '');
    return {
      veths: [...this.veths.values()].map((v) => this.#linkView(v)),
      routes: [...this.hostRoutes].map(([dst, dev]) => ({ dst: dst.replace(/\/32$/, ''), dev })),
      rules: this.#ruleViews(),
      snatElements: this.snatSet && [...this.snatSet],
    };
  }

  async observePodSide(spec: PodNetworkSpec): Promise<PodSideObservation> {
    this.calls.push({ op: 'observePodSide', arg: spec });
    return this.#podSide(spec);
  }

  async repairHostSide(spec: PodNetworkSpec): Promise<string[]> {
    this.calls.push({ op: 'repairHostSide', arg: spec });
    this.#check('repairHostSide', 'repairHostSide', spec.hostVeth);
    const drift = this.#hostSide(spec);
    const missing = new Set(drift.map((d) => d.piece));
    const veth = this.veths.get(spec.hostVeth);
    if (!veth) {
      throw new DataplaneError(
        'repairHostSide',
        `link show dev ${spec.hostVeth}`,
        spec.hostVeth,
        'host veth missing',
      );
    }
    if (missing.has('snat') && !this.snatSet) {
      throw new DataplaneError('repairHostSide', 'snat', spec.hostVeth, 'Error: No such file or directory');
    }
    if (missing.has('vethUp')) veth.up = true;
    if (missing.has('hostRoute')) this.hostRoutes.set(`${spec.ip}/32`, spec.hostVeth);
    if (missing.has('ruleTo'))
      this.rules.push({ priority: RULE_PRIORITY_TO_POD, to: `${spec.ip}/32`, table: MAIN_TABLE });
    if (missing.has('ruleFrom')) {
      this.rules.push({ priority: RULE_PRIORITY_FROM_POD, from: `${spec.ip}/32`, table: spec.routeTable });
    }
    if (missing.has('snat')) this.snatSet?.add(spec.ip);
    return drift.map((d) => d.problem);
  }

  async repairPodSide(spec: PodNetworkSpec): Promise<string[]> {
    this.calls.push({ op: 'repairPodSide', arg: spec });
    this.#check('repairPodSide', 'repairPodSide', spec.hostVeth);
    const side = this.#podSide(spec);
    if (!side.reachable) {
      throw new DataplaneError(
        'repairPodSide',
        `nsenter --net=${spec.netnsPath}`,
        spec.hostVeth,
        side.reason,
      );
    }
    const pod = this.podInterface(spec.netnsPath, spec.ifName);
    if (!pod) {
      throw new DataplaneError(
        'repairPodSide',
        `addr show dev ${spec.ifName}`,
        spec.hostVeth,
        'pod interface missing',
      );
    }
    const missing = new Set(side.drift.map((d) => d.piece));
    if (missing.has('interfaceUp')) pod.up = true;
    if (missing.has('address')) pod.addresses.add(spec.ip);
    if (missing.has('gatewayRoute')) pod.gatewayRoute = true;
    if (missing.has('defaultRoute')) pod.defaultRoute = true;
    if (missing.has('neighbour')) pod.neighbour = { mac: spec.hostMac.toLowerCase(), permanent: true };
    return side.drift.map((d) => d.problem);
  }

  async listHostVeths(prefix: string): Promise<string[]> {
    this.calls.push({ op: 'listHostVeths', arg: prefix });
    return [...this.veths.keys()].filter((n) => n.startsWith(prefix));
  }

  #nextMac(): string {
    const n = ++this.#macCounter;
    return `0a:58:00:00:${((n >> 8) & 0xff).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`;
  }
}
