// The device on the trunk ENI's link that reaches one branch ENI. Owned by a branch binding (pod
// UID + branch ENI), never by a VLAN ID alone: its name comes from the binding, so a late DEL of
// another pod that once had this VLAN cannot name it (ownership). A missing device is recreated in
// place (the pod's own veth is untouched); the routes on it come back with the binding's repair.
import { TRUNK_DRIVERS } from '../../infra/trunk-driver.ts';
import type { TrunkDeviceResource } from '../resource.ts';
import type { Finding, KindRules } from './kind.ts';

/** Names of branch devices start with this (and carry a hash of their binding). */
export const BRANCH_DEVICE_PREFIX = 'vlb';
/** Branch bindings' route tables are allocated from here up (ENI tables are 2 and up, below). */
export const BRANCH_TABLE_BASE = 1000;
export const BRANCH_TABLE_LIMIT = BRANCH_TABLE_BASE + 4094;
/** Strict mode's iif rules, ahead of every pod rule (the upstream's priority). */
export const RULE_PRIORITY_BRANCH = 10;

const create = ({ kind: _, ...spec }: TrunkDeviceResource) => [
  { side: 'node' as const, op: { op: 'trunkDeviceAdd' as const, ...spec } },
  { side: 'node' as const, op: { op: 'linkUp' as const, dev: spec.name } },
];

export const trunkDeviceKind: KindRules<TrunkDeviceResource> = {
  parse(read) {
    const driver = read.oneOf('driver', TRUNK_DRIVERS);
    return {
      kind: 'trunkDevice',
      name: read.str('name'),
      parent: read.str('parent'),
      mac: read.str('mac'),
      mtu: read.int('mtu'),
      vlanId: read.int('vlanId'),
      driver,
    };
  },
  create,
  remove: (r) => [{ side: 'node', op: { op: 'linkDel', dev: r.name } }],
  check(r, views): Finding[] {
    const link = views.node.links.find((l) => l.ifname === r.name);
    if (!link)
      return [
        {
          resource: r,
          problem: `branch device ${r.name} (VLAN ${r.vlanId} on ${r.parent}) missing`,
          repair: create(r),
        },
      ];
    if (link.address !== r.mac || (link.parent !== undefined && link.parent !== r.parent)) {
      // Not the device this binding made (it cannot be ours to change): only a person can sort it out.
      return [{ resource: r, problem: `branch device ${r.name} is not on ${r.parent} with MAC ${r.mac}` }];
    }
    if (!link.flags.includes('UP')) {
      return [
        {
          resource: r,
          problem: `branch device ${r.name} down`,
          repair: [{ side: 'node', op: { op: 'linkUp', dev: r.name } }],
        },
      ];
    }
    return [];
  },
  identity: (r) => `trunkDevice ${r.name}`,
  describe: (r) => `branch device ${r.name} (VLAN ${r.vlanId}, ${r.mac} on ${r.parent}, ${r.driver})`,
  removalRank: 2,
  orphans: (node, ctx) =>
    node.links
      .filter((l) => l.ifname.startsWith(BRANCH_DEVICE_PREFIX) && (l.kind === 'vlan' || l.kind === 'macvlan'))
      .filter((l) => !ctx.owns(`trunkDevice ${l.ifname}`))
      .map((l) => ({
        identity: `trunkDevice ${l.ifname}`,
        description: `branch device ${l.ifname}`,
        remove: [{ side: 'node', op: { op: 'linkDel', dev: l.ifname } }],
      })),
};
