// An address on an interface: the pod's /32 on its eth0, an ENI's primary /32 on its link
// (ifAddress), and an IPv6 pod's /128, added without DAD (ipv6Address). One set of rules serves
// both; they differ in the family the view is searched for and in `nodad`.
import type { IfAddressResource, Ipv6AddressResource } from '../resource.ts';
import type { NamespaceView } from '../views.ts';
import type { KindRules } from './kind.ts';

type AddressResource = IfAddressResource | Ipv6AddressResource;

function present(r: AddressResource, view: NamespaceView): boolean {
  const [local, len] = r.cidr.split('/');
  const family = r.kind === 'ipv6Address' ? 'inet6' : 'inet';
  const link = view.links.find((l) => l.ifname === r.dev);
  return (
    link?.addresses.some((a) => a.family === family && a.local === local && a.prefixlen === Number(len)) ===
    true
  );
}

function addressRules<R extends AddressResource>(kind: R['kind']): KindRules<R> {
  const nodad = kind === 'ipv6Address' ? { nodad: true } : {};
  return {
    parse: (read) => ({ kind, side: read.side('side'), dev: read.str('dev'), cidr: read.str('cidr') }) as R,
    create: (r) => [{ side: r.side, op: { op: 'addrAdd', dev: r.dev, cidr: r.cidr, ...nodad } }],
    // A pod's address goes with its interface; DEL never enters the pod's namespace.
    remove: (r) =>
      r.side === 'pod' ? [] : [{ side: 'node', op: { op: 'addrDel', dev: r.dev, cidr: r.cidr } }],
    check(r, views) {
      const view = r.side === 'pod' ? views.pod : views.node;
      if (!view || present(r, view)) return [];
      return [
        {
          resource: r,
          problem: `address ${r.cidr} missing on ${r.dev}`,
          repair: [
            { side: r.side, op: { op: 'addrAdd', dev: r.dev, cidr: r.cidr, replace: true, ...nodad } },
          ],
        },
      ];
    },
    identity: (r) => `${kind} ${r.side} ${r.dev} ${r.cidr}`,
    describe: (r) => `address ${r.cidr} on ${r.dev}`,
    removalRank: 1,
  };
}

export const ifAddressKind: KindRules<IfAddressResource> = addressRules<IfAddressResource>('ifAddress');
export const ipv6AddressKind: KindRules<Ipv6AddressResource> =
  addressRules<Ipv6AddressResource>('ipv6Address');
