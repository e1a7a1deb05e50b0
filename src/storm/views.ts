// What the storm observes of a lab, parsed once at the edge into typed views: the agent's state
// (GET /v1/state), the node's kernel (`ip -j` in the node namespace), the sandboxes' addresses,
// and the emulator's EC2 state (GET /admin/state). The checks work on these views only, so they
// can be tested on crafted states.

/** A resource an attachment or binding records (only the fields the checks compare). */
export interface OwnedResource {
  readonly kind: string;
  readonly side?: string;
  readonly dst?: string;
  readonly dev?: string;
  readonly table?: number;
  readonly priority?: number;
  readonly from?: string;
  readonly to?: string;
  readonly hostName?: string;
  readonly name?: string;
  readonly ip?: string;
  readonly eniId?: string;
}

export interface AgentAttachment {
  readonly keyString: string;
  readonly containerId: string;
  readonly ip: string | undefined;
  readonly eniId: string | undefined;
  /** The branch binding (pod UID/branch ENI) of a pod with security groups. */
  readonly binding: string | undefined;
  readonly resources: readonly OwnedResource[];
}

export interface AgentBinding {
  readonly key: string;
  readonly ip: string;
  readonly resources: readonly OwnedResource[];
}

export interface PoolEni {
  readonly eniId: string;
  readonly primaryIp: string;
  readonly deviceNumber: number;
  /** The ENI's own route table (its default route, and its primary address's rule, point there). */
  readonly routeTable: number;
  /** address -> kind (free, assigned, cooling, ...) */
  readonly addresses: ReadonlyMap<string, string>;
}

export interface AgentView {
  readonly pid: number;
  readonly instanceId: string;
  readonly attachments: readonly AgentAttachment[];
  readonly bindings: readonly AgentBinding[];
  readonly pool: readonly PoolEni[];
}

export interface KernelRoute {
  readonly dst: string;
  readonly dev: string;
  readonly table: number;
}
export interface KernelRule {
  readonly priority: number;
  /** a.b.c.d/n, or undefined for "all" */
  readonly from: string | undefined;
  readonly to: string | undefined;
  readonly table: number;
  /** The rule's fwmark selector, if any (NodePort support's rule). */
  readonly fwmark?: string;
}
export interface KernelView {
  readonly links: readonly string[];
  readonly routes: readonly KernelRoute[];
  readonly rules: readonly KernelRule[];
}

export interface Ec2Eni {
  readonly eniId: string;
  readonly primaryIp: string;
  readonly secondaryIps: readonly string[];
  /** The instance it is attached to; undefined when available (unattached). */
  readonly instanceId: string | undefined;
  readonly interfaceType: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly description: string;
}
export interface Ec2View {
  readonly enis: readonly Ec2Eni[];
  /** Calls answered since the emulator started, per action. */
  readonly calls: Readonly<Record<string, { readonly calls: number; readonly errors: number }>>;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const array = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

function resource(r: Json): OwnedResource {
  const out: Record<string, unknown> = { kind: str(r.kind) ?? '?' };
  for (const k of ['side', 'dst', 'dev', 'from', 'to', 'hostName', 'name', 'ip', 'eniId'] as const) {
    const v = str(r[k]);
    if (v !== undefined) out[k] = v;
  }
  for (const k of ['table', 'priority'] as const) {
    const v = num(r[k]);
    if (v !== undefined) out[k] = v;
  }
  return out as unknown as OwnedResource;
}

/** A binding key: a string on an attachment (`branch`), an object `{podUid, eniId}` on a binding. */
function bindingKeyOf(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (!isObject(v)) return undefined;
  return `${str(v.podUid) ?? '?'}/${str(v.eniId) ?? '?'}`;
}

export function parseAgentState(body: unknown): AgentView {
  if (!isObject(body)) throw new Error('agent state is not a JSON object');
  const pool = isObject(body.pool) ? array(body.pool.enis) : [];
  return {
    pid: num(body.pid) ?? 0,
    instanceId: str(body.instanceId) ?? '',
    attachments: array(body.attachments).map((a) => ({
      keyString: str(a.keyString) ?? '?',
      containerId: isObject(a.key) ? (str(a.key.containerId) ?? '?') : '?',
      ip: str(a.ip),
      eniId: str(a.eniId),
      binding: bindingKeyOf(a.branch),
      resources: array(a.resources).map(resource),
    })),
    bindings: array(body.bindings).map((b) => ({
      key: bindingKeyOf(b.key) ?? '?',
      ip: str(b.ip) ?? '?',
      resources: array(b.resources).map(resource),
    })),
    pool: pool.map((e) => ({
      eniId: str(e.eniId) ?? '?',
      primaryIp: str(e.primaryIp) ?? '?',
      deviceNumber: num(e.deviceNumber) ?? -1,
      routeTable: num(e.routeTable) ?? -1,
      addresses: new Map(
        Object.entries(isObject(e.addresses) ? e.addresses : {}).map(([ip, v]) => [
          ip,
          isObject(v) ? (str(v.kind) ?? '?') : '?',
        ]),
      ),
    })),
  };
}

const NAMED_TABLES: Readonly<Record<string, number>> = { main: 254, local: 255, default: 253 };

function tableOf(v: unknown): number {
  if (v === undefined) return 254;
  const s = String(v);
  return NAMED_TABLES[s] ?? Number(s);
}

/** `ip -j route show table all` (local and broadcast routes left out: the kernel's own). */
export function parseRoutes(json: unknown): KernelRoute[] {
  return array(json)
    .filter((r) => r.type === undefined || r.type === 'unicast')
    .map((r) => ({ dst: str(r.dst) ?? '?', dev: str(r.dev) ?? '', table: tableOf(r.table) }));
}

function cidrOf(addr: unknown, len: unknown): string | undefined {
  const a = str(addr);
  if (a === undefined || a === 'all') return undefined;
  return a.includes('/') ? a : `${a}/${num(len) ?? 32}`;
}

export function parseRules(json: unknown): KernelRule[] {
  return array(json).map((r) => ({
    priority: num(r.priority) ?? -1,
    from: cidrOf(r.src, r.srclen),
    to: cidrOf(r.dst, r.dstlen),
    table: tableOf(r.table),
    ...(typeof r.fwmark === 'string' ? { fwmark: r.fwmark } : {}),
  }));
}

export function parseLinks(json: unknown): string[] {
  return array(json).flatMap((l) => (typeof l.ifname === 'string' ? [l.ifname] : []));
}

/** The IPv4 addresses of `ip -j addr show` output. */
export function parseAddresses(json: unknown): string[] {
  return array(json).flatMap((l) =>
    array(l.addr_info).flatMap((a) => (a.family === 'inet' && typeof a.local === 'string' ? [a.local] : [])),
  );
}

export function parseEc2State(body: unknown): Ec2View {
  if (!isObject(body)) throw new Error('emulator state is not a JSON object');
  const calls: Record<string, { calls: number; errors: number }> = {};
  if (isObject(body.ec2Calls)) {
    for (const [action, c] of Object.entries(body.ec2Calls)) {
      if (isObject(c)) calls[action] = { calls: num(c.calls) ?? 0, errors: num(c.errors) ?? 0 };
    }
  }
  return {
    enis: array(body.enis).map((e) => ({
      eniId: str(e.eniId) ?? '?',
      primaryIp: str(e.primaryIp) ?? '?',
      secondaryIps: Array.isArray(e.secondaryIps) ? e.secondaryIps.filter((x) => typeof x === 'string') : [],
      instanceId: isObject(e.attachment) ? str(e.attachment.instanceId) : undefined,
      interfaceType: str(e.interfaceType) ?? 'interface',
      tags: Object.fromEntries(
        Object.entries(isObject(e.tags) ? e.tags : {}).flatMap(([k, v]) =>
          typeof v === 'string' ? [[k, v]] : [],
        ),
      ),
      description: str(e.description) ?? '',
    })),
    calls,
  };
}
