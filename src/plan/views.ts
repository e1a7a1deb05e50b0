// The kernel's state as vpcnet reads it, in the kernel's own vocabulary (the fields of `ip -j`
// output that vpcnet judges). Every driver renders its state into these views, and every resource
// kind judges drift against them with the same pure functions, so a fake kernel and the real one
// cannot disagree about what "present" means.

export interface IpAddress {
  readonly family: string;
  readonly local: string;
  readonly prefixlen: number;
}

export interface IpLink {
  readonly ifname: string;
  /** MAC, lower case. */
  readonly address: string;
  readonly flags: readonly string[];
  readonly mtu: number;
  readonly addresses: readonly IpAddress[];
  /** Link type (veth, vlan, macvlan, ...) when known. */
  readonly kind?: string;
  /** The parent link of a vlan or macvlan device. */
  readonly parent?: string;
  /** 802.1q id of a vlan device. */
  readonly vlanId?: number;
}

export interface IpRoute {
  /** "default", or a prefix; ip omits the length of a host route ("10.0.0.5"). */
  readonly dst: string;
  readonly gateway?: string;
  readonly dev?: string;
  /** Route table number (254 = main). */
  readonly table: number;
  readonly scope?: string;
  /** Absent: 0. */
  readonly metric?: number;
}

export interface IpRule {
  readonly priority: number;
  /** "all" or an address; a prefix length other than the full one is in `srclen`/`dstlen`. */
  readonly src: string;
  readonly srclen?: number;
  readonly dst?: string;
  readonly dstlen?: number;
  readonly iif?: string;
  readonly table: number;
  /**
   * Keys of selectors or actions this view does not model (fwmark, oif, not, ...), if any. Such a
   * rule is never vpcnet's, and `ip rule del` without them would match it too: GC leaves it alone.
   */
  readonly other?: readonly string[];
}

export interface IpNeighbour {
  readonly dst: string;
  readonly dev?: string;
  readonly lladdr?: string;
  readonly state: readonly string[];
}

/** One network namespace as read at once. */
export interface NamespaceView {
  /** Every link, with its addresses. */
  readonly links: readonly IpLink[];
  /** Routes of every table but `local`. */
  readonly routes: readonly IpRoute[];
  readonly rules: readonly IpRule[];
  readonly neighbours: readonly IpNeighbour[];
}

/** The node's namespace, plus vpcnet's SNAT set (undefined when the set does not exist). */
export interface NodeView extends NamespaceView {
  readonly snatElements: readonly string[] | undefined;
}

/** A pod's namespace, or why it could not be entered. */
export type PodView =
  | ({ readonly reachable: true } & NamespaceView)
  | { readonly reachable: false; readonly reason: string };

export const MAIN_TABLE = 254;

/** A host route's destination as ip shows it: "10.0.0.5/32" as "10.0.0.5", "2001:db8::5/128" as "2001:db8::5". */
export function bareDestination(dst: string): string {
  if (dst.includes(':')) return dst.endsWith('/128') ? dst.slice(0, -4) : dst;
  return dst.endsWith('/32') ? dst.slice(0, -3) : dst;
}

/** A destination as a prefix: "10.0.0.5" as "10.0.0.5/32", "2001:db8::5" as "2001:db8::5/128". */
export function prefixDestination(dst: string): string {
  if (dst === 'default' || dst.includes('/')) return dst;
  return dst.includes(':') ? `${dst}/128` : `${dst}/32`;
}

/** "10.0.0.5/32" and "10.0.0.5" name the same host route (as do "2001:db8::5/128" and "2001:db8::5"). */
export function sameDestination(a: string, b: string): boolean {
  return bareDestination(a) === bareDestination(b);
}
