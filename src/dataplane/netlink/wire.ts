// The wire between the agent and bin/vpcnet-netlink (native/main.c): requests are lines on the
// helper's stdin, answers are JSON lines on its stdout, each carrying its request's id, so many
// requests can be in flight and answers arrive in any order.
//
//   run <id> <stop|all> <n> <target>     then n operation lines (opLine)
//   plan <id> <parts>                     then each part: `part <n> <target>` and n operation
//                                         lines, run in turn in 'stop' mode; the first part that
//                                         stops short ends the plan
//   read <id> <target>[ scope <item>...]   a pod's namespace within a scope (PodScope): items
//                                         `link:<hex name>`, `route:<table>:<hex name>`, `rule:<priority>`
//   nftset <id> <target> <table> <set>    the elements of an nftables IPv4 set (vpcnet's SNAT set)
//   target: "node", or "pod:" + the namespace path as lower-case hex (any byte but NUL may be in a
//   path; hex keeps the line free of spaces)
//
// Answers: {"id","entered":false,"reason"} when the namespace was refused or could not be
// entered; a run: {"id","entered":true,"failures":[{"index","message"}]}; a read:
// {"id","entered":true,"links","routes","rules"[,"neighbours"],"received"} in `ip -d -j` shape
// ("received": how many objects of each kind the kernel sent, kept or not), or "error", or for a pod
// "tooLarge" (it holds more of a kind than the helper reads there: native/dump.h);
// a plan: {"id","parts":[...]}, each part as a run's answer without its id, only the parts that ran;
// an nftset: {"id","entered":true,"elements":[...] | null (no such table or set)}, or "error".
import type { KernelOp } from '../../plan/kernel-op.ts';
import { SNAT_SET, SNAT_TABLE } from '../ip-cli/snat.ts';
import type { Namespace, PodScope } from '../kernel.ts';

const opt = (v: string | number | undefined): string => (v === undefined ? '-' : String(v));
const flag = (v: boolean | undefined): string => (v === true ? '1' : '0');

/** One operation as the helper reads it (fields in a fixed order, "-" for absent). Validated ops only. */
export function opLine(op: KernelOp): string {
  switch (op.op) {
    case 'vethAdd':
      return `vethAdd ${op.name} ${opt(op.mac)} ${op.mtu} ${op.peer} ${op.peerMac}`;
    case 'trunkDeviceAdd':
      return `trunkDeviceAdd ${op.name} ${op.parent} ${op.mac} ${op.mtu} ${op.vlanId} ${op.driver}`;
    case 'linkUp':
      return `linkUp ${op.dev} ${opt(op.mtu)}`;
    case 'linkDel':
      return `linkDel ${op.dev}`;
    case 'addrAdd':
      return `addrAdd ${op.dev} ${op.cidr} ${flag(op.replace)} ${flag(op.nodad)}`;
    case 'addrDel':
      return `addrDel ${op.dev} ${op.cidr}`;
    case 'routeAdd':
      return `routeAdd ${op.dst} ${op.dev} ${opt(op.via)} ${op.table} ${flag(op.scopeLink)} ${opt(op.metric)} ${flag(op.replace)}`;
    case 'routeDel':
      return `routeDel ${op.dst} ${op.dev} ${op.table}`;
    case 'neighAdd':
      return `neighAdd ${op.dev} ${op.ip} ${op.lladdr} ${flag(op.replace)}`;
    case 'ruleAdd':
    case 'ruleDel': {
      const r = op.rule;
      return `${op.op} ${r.priority} ${opt(r.from)} ${opt(r.to)} ${opt(r.iif)} ${r.table}`;
    }
    case 'snatAdd':
    case 'snatDel':
      return `${op.op} ${SNAT_TABLE} ${SNAT_SET} ${op.ip}`;
  }
}

const PATH_MAX = 4096;

export function targetText(ns: Namespace): string {
  if (ns.side === 'node') return 'node';
  const bytes = Buffer.from(ns.path, 'utf8');
  // PATH_MAX: the helper's line has room for no more, and the kernel would refuse it anyway.
  if (bytes.length === 0 || bytes.length >= PATH_MAX || ns.path.includes('\0')) {
    throw new Error(`invalid network namespace path ${JSON.stringify(ns.path.slice(0, 200))}`);
  }
  return `pod:${bytes.toString('hex')}`;
}

export function runRequest(
  id: number,
  ns: Namespace,
  ops: readonly KernelOp[],
  mode: 'stop' | 'all',
): string {
  const lines = [`run ${id} ${mode} ${ops.length} ${targetText(ns)}`, ...ops.map(opLine)];
  return `${lines.join('\n')}\n`;
}

/** Runs in turn ('stop' mode) in one request: one round trip for a pod's side and the node's. */
export function planRequest(
  id: number,
  parts: readonly { ns: Namespace; ops: readonly KernelOp[] }[],
): string {
  const lines = [`plan ${id} ${parts.length}`];
  for (const p of parts) lines.push(`part ${p.ops.length} ${targetText(p.ns)}`, ...p.ops.map(opLine));
  return `${lines.join('\n')}\n`;
}

export function readRequest(id: number, ns: Namespace, scope?: PodScope): string {
  if (scope === undefined) return `read ${id} ${targetText(ns)}\n`;
  if (ns.side !== 'pod') throw new Error("a read's scope is a pod's");
  return `read ${id} ${targetText(ns)} scope${scopeText(scope)}\n`;
}

/** As many items of a kind as the helper takes (SCOPE_MAX in native/dump.h); a plan names a few. */
export const SCOPE_MAX = 16;
const U32_MAX = 0xffff_ffff;

/** A scope's items; throws on what the helper would refuse (a refused line ends the helper). */
function scopeText(scope: PodScope): string {
  const lists = [scope.links, scope.routes, scope.rulePriorities];
  if (lists.some((l) => l.length > SCOPE_MAX))
    throw new Error(`a read's scope names more than ${SCOPE_MAX} of a kind`);
  const u32 = (n: number, min: number) => {
    if (!Number.isInteger(n) || n < min || n > U32_MAX)
      throw new Error(`invalid number ${n} in a read's scope`);
    return String(n);
  };
  return [
    ...scope.links.map((name) => ` link:${linkHex(name)}`),
    ...scope.routes.map((r) => ` route:${u32(r.table, 1)}:${linkHex(r.dev)}`),
    ...scope.rulePriorities.map((p) => ` rule:${u32(p, 0)}`),
  ].join('');
}

/** A link's name as hex: 1 to 15 bytes (IFNAMSIZ), no NUL. */
function linkHex(name: string): string {
  const bytes = Buffer.from(name, 'utf8');
  if (bytes.length === 0 || bytes.length >= 16 || name.includes('\0'))
    throw new Error(`invalid link name ${JSON.stringify(name)} in a read's scope`);
  return bytes.toString('hex');
}

/** The elements of vpcnet's SNAT set in `ns`. */
export function snatSetRequest(id: number, ns: Namespace): string {
  return `nftset ${id} ${targetText(ns)} ${SNAT_TABLE} ${SNAT_SET}\n`;
}

export interface RunFailureWire {
  readonly index: number;
  readonly message: string;
}

/** A run's outcome: its namespace could not be entered, or its operations' failures. */
export type RunAnswer =
  | { readonly entered: false; readonly reason: string }
  | { readonly entered: true; readonly failures: readonly RunFailureWire[] };

/** An answer as parsed at the edge: the fields each kind of request gets, checked for type. */
export type Answer =
  | { readonly id: number; readonly entered: false; readonly reason: string }
  | { readonly id: number; readonly entered: true; readonly failures: readonly RunFailureWire[] }
  | { readonly id: number; readonly parts: readonly RunAnswer[] }
  | {
      readonly id: number;
      readonly entered: true;
      readonly dump: {
        readonly links: unknown;
        readonly routes: unknown;
        readonly rules: unknown;
        readonly neighbours: unknown;
      };
    }
  | { readonly id: number; readonly entered: true; readonly error: string }
  /** A pod's namespace not read: what it holds too much of. */
  | { readonly id: number; readonly entered: true; readonly tooLarge: string }
  /** An nftset's: undefined when the table or set does not exist. */
  | { readonly id: number; readonly entered: true; readonly elements: readonly string[] | undefined };

/** Parses one answer line; throws on anything the helper never writes. */
export function parseAnswer(line: string): Answer {
  const v: unknown = JSON.parse(line);
  if (typeof v !== 'object' || v === null) throw new Error(`not an answer: ${line.slice(0, 200)}`);
  const o = v as Record<string, unknown>;
  const id = o.id;
  if (typeof id !== 'number') throw new Error(`answer without id: ${line.slice(0, 200)}`);
  if (Array.isArray(o.parts)) {
    return { id, parts: o.parts.map((p: unknown) => runAnswer(id, p)) };
  }
  if (o.entered === false) return { id, ...runAnswer(id, o) };
  if (o.entered !== true) throw new Error(`answer ${id} without "entered"`);
  if (typeof o.error === 'string') return { id, entered: true, error: o.error };
  if (typeof o.tooLarge === 'string') return { id, entered: true, tooLarge: o.tooLarge };
  if ('elements' in o) {
    const e = o.elements;
    if (e === null) return { id, entered: true, elements: undefined };
    if (!Array.isArray(e) || !e.every((x): x is string => typeof x === 'string')) {
      throw new Error(`answer ${id}: malformed set elements`);
    }
    return { id, entered: true, elements: e };
  }
  if (Array.isArray(o.failures)) return { id, ...runAnswer(id, o) };
  return {
    id,
    entered: true,
    dump: { links: o.links, routes: o.routes, rules: o.rules, neighbours: o.neighbours },
  };
}

/** A run's outcome in answer `id` (a run's answer, or a part of a plan's). */
function runAnswer(id: number, v: unknown): RunAnswer {
  const o = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  if (o.entered === false) {
    if (typeof o.reason !== 'string') throw new Error(`answer ${id} without reason`);
    return { entered: false, reason: o.reason };
  }
  if (o.entered !== true || !Array.isArray(o.failures))
    throw new Error(`answer ${id}: malformed run ${JSON.stringify(v)}`);
  const failures = o.failures.map((f: unknown): RunFailureWire => {
    const x = f as Record<string, unknown> | null;
    if (typeof x?.index !== 'number' || typeof x.message !== 'string') {
      throw new Error(`answer ${id}: malformed failure ${JSON.stringify(f)}`);
    }
    return { index: x.index, message: x.message };
  });
  return { entered: true, failures };
}
