// The primitive kernel operations every driver executes, and their one text form (the line `ip
// -batch` reads, or the nft statement). A pod plan's resources turn into these; the Linux driver
// runs them through ip and nft, the fake kernel applies them to its model, and errors quote this
// text whichever driver ran, so both report a failing step in the same words.
import { isIP, isIPv4 } from 'node:net';

/** How branch ENIs are reached on the trunk link. */
import type { TrunkDriver } from '../infra/trunk-driver.ts';

export type { TrunkDriver };

/** A policy rule as vpcnet makes it: one selector set, one table. */
export interface RuleSpec {
  readonly priority: number;
  /** a.b.c.d/n */
  readonly from?: string;
  /** a.b.c.d/n */
  readonly to?: string;
  /** Incoming interface. */
  readonly iif?: string;
  readonly table: number;
}

/**
 * A device on the trunk ENI's link that carries one branch ENI: an 802.1q VLAN device (`vlan`), or
 * a macvlan device with the branch ENI's MAC where the kernel has no 802.1q.
 */
export interface TrunkDeviceSpec {
  readonly name: string;
  /** The trunk ENI's link. */
  readonly parent: string;
  /** The branch ENI's MAC. */
  readonly mac: string;
  readonly mtu: number;
  readonly vlanId: number;
  readonly driver: TrunkDriver;
}

export type KernelOp =
  /** Run in the pod's namespace: `name` there, its peer created directly in the node's namespace. */
  | {
      readonly op: 'vethAdd';
      readonly name: string;
      readonly mac?: string;
      readonly mtu: number;
      readonly peer: string;
      readonly peerMac: string;
    }
  | ({ readonly op: 'trunkDeviceAdd' } & TrunkDeviceSpec)
  /** Sets a link up (and its MTU when given). */
  | { readonly op: 'linkUp'; readonly dev: string; readonly mtu?: number }
  | { readonly op: 'linkDel'; readonly dev: string }
  | {
      readonly op: 'addrAdd';
      readonly dev: string;
      readonly cidr: string;
      readonly replace?: boolean;
      /** IPv6 only: usable at once, without duplicate address detection (`nodad`). */
      readonly nodad?: boolean;
    }
  | { readonly op: 'addrDel'; readonly dev: string; readonly cidr: string }
  | {
      readonly op: 'routeAdd';
      /** "default" or a prefix (IPv4, or IPv6 with an IPv6 `via` for a default route) */
      readonly dst: string;
      readonly dev: string;
      readonly via?: string;
      readonly table: number;
      readonly scopeLink?: boolean;
      readonly metric?: number;
      readonly replace?: boolean;
    }
  | { readonly op: 'routeDel'; readonly dst: string; readonly dev: string; readonly table: number }
  | {
      readonly op: 'neighAdd';
      readonly dev: string;
      readonly ip: string;
      readonly lladdr: string;
      readonly replace?: boolean;
    }
  | { readonly op: 'ruleAdd'; readonly rule: RuleSpec }
  | { readonly op: 'ruleDel'; readonly rule: RuleSpec }
  /** Membership of an address in vpcnet's SNAT set (nftables, not ip). */
  | { readonly op: 'snatAdd'; readonly ip: string }
  | { readonly op: 'snatDel'; readonly ip: string };

/** Where an operation runs: the node's namespace, or the pod's (entered by path). */
export type Side = 'node' | 'pod';

export interface Step {
  readonly side: Side;
  readonly op: KernelOp;
}

export function isSnatOp(op: KernelOp): op is Extract<KernelOp, { op: 'snatAdd' | 'snatDel' }> {
  return op.op === 'snatAdd' || op.op === 'snatDel';
}

const LINK_NAME = /^[^\s/:]{1,15}$/;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

/** Everything that goes into a batch line is checked first: nothing may read as a second command. */
export function validateOp(op: KernelOp): void {
  const link = (name: string) => {
    if (!LINK_NAME.test(name) || name === '.' || name === '..') {
      throw new Error(`invalid link name ${JSON.stringify(name)}`);
    }
  };
  const ip = (v: string) => {
    if (!isIPv4(v)) throw new Error(`not an IPv4 address: ${JSON.stringify(v)}`);
  };
  // Addresses, routes and neighbours come in both families (IPv6 pods); rules and SNAT are IPv4 only.
  const anyIp = (v: string) => {
    if (isIP(v) === 0) throw new Error(`not an IP address: ${JSON.stringify(v)}`);
  };
  const uint = (what: string, n: number) => {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`invalid ${what} ${n}`);
  };
  const mac = (v: string) => {
    if (!MAC.test(v)) throw new Error(`invalid MAC ${JSON.stringify(v)}`);
  };
  switch (op.op) {
    case 'vethAdd':
      link(op.name);
      link(op.peer);
      mac(op.peerMac);
      if (op.mac !== undefined) mac(op.mac);
      uint('mtu', op.mtu);
      return;
    case 'trunkDeviceAdd':
      link(op.name);
      link(op.parent);
      mac(op.mac);
      uint('mtu', op.mtu);
      if (!Number.isInteger(op.vlanId) || op.vlanId < 1 || op.vlanId > 4094) {
        throw new Error(`invalid VLAN ID ${op.vlanId}`);
      }
      if (op.driver !== 'vlan' && op.driver !== 'macvlan')
        throw new Error(`invalid trunk driver ${String(op.driver)}`);
      return;
    case 'linkUp':
      link(op.dev);
      if (op.mtu !== undefined) uint('mtu', op.mtu);
      return;
    case 'linkDel':
      link(op.dev);
      return;
    case 'addrAdd':
    case 'addrDel':
      link(op.dev);
      assertCidr(op.cidr);
      if (op.op === 'addrAdd' && op.nodad === true && cidrFamily(op.cidr) !== 6) {
        throw new Error(`nodad is for IPv6 addresses only: ${JSON.stringify(op.cidr)}`);
      }
      return;
    case 'routeAdd':
    case 'routeDel':
      link(op.dev);
      if (op.dst !== 'default') assertCidr(op.dst);
      if (op.op === 'routeAdd' && op.via !== undefined) {
        anyIp(op.via);
        if (op.dst !== 'default' && isIP(op.via) !== cidrFamily(op.dst)) {
          throw new Error(`route to ${op.dst} via ${op.via}: the gateway is of another address family`);
        }
      }
      if (op.op === 'routeAdd' && op.metric !== undefined) uint('route metric', op.metric);
      uint('route table', op.table);
      return;
    case 'neighAdd':
      link(op.dev);
      anyIp(op.ip);
      mac(op.lladdr);
      return;
    case 'ruleAdd':
    case 'ruleDel': {
      const r = op.rule;
      uint('rule priority', r.priority);
      uint('route table', r.table);
      if (r.from !== undefined) assertIpv4Cidr(r.from);
      if (r.to !== undefined) assertIpv4Cidr(r.to);
      if (r.iif !== undefined) link(r.iif);
      return;
    }
    case 'snatAdd':
    case 'snatDel':
      ip(op.ip);
      return;
  }
}

export function assertIpv4Cidr(cidr: string): void {
  const [addr, len, extra] = cidr.split('/');
  const n = Number(len);
  if (addr === undefined || extra !== undefined || !isIPv4(addr) || !/^\d{1,2}$/.test(len ?? '') || n > 32) {
    throw new Error(`not an IPv4 CIDR: ${JSON.stringify(cidr)}`);
  }
}

/** 4 or 6: the family of a CIDR (or a bare address). */
export function cidrFamily(cidr: string): 4 | 6 {
  return cidr.includes(':') ? 6 : 4;
}

/** An IPv4 CIDR (/0-/32) or an IPv6 one (/0-/128); the address alone is not enough. */
export function assertCidr(cidr: string): void {
  if (cidrFamily(cidr) === 4) {
    assertIpv4Cidr(cidr);
    return;
  }
  const [addr, len, extra] = cidr.split('/');
  if (
    addr === undefined ||
    extra !== undefined ||
    isIP(addr) !== 6 ||
    !/^\d{1,3}$/.test(len ?? '') ||
    Number(len) > 128
  ) {
    throw new Error(`not an IPv6 CIDR: ${JSON.stringify(cidr)}`);
  }
}

function ruleSelectors(r: RuleSpec): string {
  return [
    r.from === undefined ? '' : ` from ${r.from}`,
    r.to === undefined ? '' : ` to ${r.to}`,
    r.iif === undefined ? '' : ` iif ${r.iif}`,
  ].join('');
}

function tableName(table: number): string {
  return table === 254 ? 'main' : String(table);
}

/**
 * The `ip -batch` line of an operation (for snat operations, the nft statement). `nodeNetns` is how
 * the pod's namespace names the node's for a veth's peer: a path, or "<node>" in messages.
 */
export function opText(op: KernelOp, nodeNetns = '<node>'): string {
  switch (op.op) {
    case 'vethAdd': {
      const mac = op.mac === undefined ? '' : ` address ${op.mac}`;
      return `link add ${op.name} mtu ${op.mtu}${mac} type veth peer name ${op.peer} mtu ${op.mtu} address ${op.peerMac} netns ${nodeNetns}`;
    }
    case 'trunkDeviceAdd': {
      const type = op.driver === 'vlan' ? `vlan id ${op.vlanId}` : 'macvlan mode private';
      return `link add link ${op.parent} name ${op.name} address ${op.mac} mtu ${op.mtu} type ${type}`;
    }
    case 'linkUp':
      return `link set ${op.dev}${op.mtu === undefined ? '' : ` mtu ${op.mtu}`} up`;
    case 'linkDel':
      return `link del ${op.dev}`;
    case 'addrAdd':
      return `addr ${op.replace === true ? 'replace' : 'add'} ${op.cidr} dev ${op.dev}${op.nodad === true ? ' nodad' : ''}`;
    case 'addrDel':
      return `addr del ${op.cidr} dev ${op.dev}`;
    case 'routeAdd': {
      const via = op.via === undefined ? '' : ` via ${op.via}`;
      const scope = op.scopeLink === true ? ' scope link' : '';
      const verb = op.replace === true ? 'replace' : 'add';
      const metric = op.metric === undefined ? '' : ` metric ${op.metric}`;
      return `route ${verb} ${op.dst}${via} dev ${op.dev}${scope} table ${tableName(op.table)}${metric}`;
    }
    case 'routeDel':
      return `route del ${op.dst} dev ${op.dev} table ${tableName(op.table)}`;
    case 'neighAdd':
      return `neigh ${op.replace === true ? 'replace' : 'add'} ${op.ip} dev ${op.dev} lladdr ${op.lladdr} nud permanent`;
    case 'ruleAdd':
      return `rule add${ruleSelectors(op.rule)} lookup ${tableName(op.rule.table)} prio ${op.rule.priority}`;
    case 'ruleDel':
      return `rule del${ruleSelectors(op.rule)} lookup ${tableName(op.rule.table)} prio ${op.rule.priority}`;
    case 'snatAdd':
      return `nft add element ip vpcnet snat_pods { ${op.ip} }`;
    case 'snatDel':
      return `nft delete element ip vpcnet snat_pods { ${op.ip} }`;
  }
}

/** Kernel answers that mean "the thing to delete is not there": already gone counts as removed. */
export function isAlreadyGone(message: string): boolean {
  return /No such file or directory|No such process|Cannot find device|does not exist|Cannot assign requested address|Address not found/.test(
    message,
  );
}
