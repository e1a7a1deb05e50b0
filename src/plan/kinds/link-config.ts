// A link vpcnet configures but does not own the existence of (an ENI's link: the cloud attaches
// it, vpcnet brings it up with its MTU). Never undone: the link goes away with the ENI.
import type { LinkConfigResource } from '../resource.ts';
import type { KindRules } from './kind.ts';

export const linkConfigKind: KindRules<LinkConfigResource> = {
  parse: (read) => ({ kind: 'linkConfig', dev: read.str('dev'), mtu: read.int('mtu') }),
  create: (r) => [{ side: 'node', op: { op: 'linkUp', dev: r.dev, mtu: r.mtu } }],
  remove: () => [],
  check(r, views) {
    const link = views.node.links.find((l) => l.ifname === r.dev);
    if (!link) return [{ resource: r, problem: `link ${r.dev} missing` }];
    if (link.flags.includes('UP') && link.mtu === r.mtu) return [];
    return [
      {
        resource: r,
        problem: `link ${r.dev} ${link.flags.includes('UP') ? `has MTU ${link.mtu}` : 'down'}`,
        repair: linkConfigKind.create(r),
      },
    ];
  },
  identity: (r) => `linkConfig ${r.dev}`,
  describe: (r) => `link ${r.dev} up, MTU ${r.mtu}`,
  removalRank: 2,
};
