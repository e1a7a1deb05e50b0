// Membership of a pod address in vpcnet's SNAT set: its traffic to destinations outside the VPC
// leaves with the node's primary IP (unless the node's SNAT is external).
import type { SnatResource } from '../resource.ts';
import type { KindRules } from './kind.ts';

export const snatKind: KindRules<SnatResource> = {
  parse: (read) => ({ kind: 'snat', ip: read.str('ip') }),
  create: (r) => [{ side: 'node', op: { op: 'snatAdd', ip: r.ip } }],
  remove: (r) => [{ side: 'node', op: { op: 'snatDel', ip: r.ip } }],
  check(r, views) {
    const elements = views.node.snatElements;
    if (elements?.includes(r.ip)) return [];
    const problem =
      elements === undefined
        ? `snat set missing (element ${r.ip} cannot be present)`
        : `snat element ${r.ip} missing`;
    return [{ resource: r, problem, repair: snatKind.create(r) }];
  },
  identity: (r) => `snat ${r.ip}`,
  describe: (r) => `snat element ${r.ip}`,
  removalRank: 0,
  orphans: (node, ctx) =>
    (node.snatElements ?? [])
      .filter((ip) => !ctx.owns(`snat ${ip}`) && !ctx.protectedAddresses.has(ip))
      .map((ip) => ({
        identity: `snat ${ip}`,
        description: `snat element ${ip}`,
        remove: [{ side: 'node', op: { op: 'snatDel', ip } }],
      })),
};
