// An address on an interface: the pod's /32 on its eth0, an ENI's primary /32 on its link.
import type { IfAddressResource } from '../resource.ts';
import type { NamespaceView } from '../views.ts';
import type { KindRules } from './kind.ts';

function present(r: IfAddressResource, view: NamespaceView): boolean {
  const [local, len] = r.cidr.split('/');
  const link = view.links.find((l) => l.ifname === r.dev);
  return (
    link?.addresses.some((a) => a.family === 'inet' && a.local === local && a.prefixlen === Number(len)) ===
    true
  );
}

export const ifAddressKind: KindRules<IfAddressResource> = {
  parse: (read) => ({
    kind: 'ifAddress',
    side: read.side('side'),
    dev: read.str('dev'),
    cidr: read.str('cidr'),
  }),
  create: (r) => [{ side: r.side, op: { op: 'addrAdd', dev: r.dev, cidr: r.cidr } }],
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
        repair: [{ side: r.side, op: { op: 'addrAdd', dev: r.dev, cidr: r.cidr, replace: true } }],
      },
    ];
  },
  identity: (r) => `ifAddress ${r.side} ${r.dev} ${r.cidr}`,
  describe: (r) => `address ${r.cidr} on ${r.dev}`,
  removalRank: 1,
};
