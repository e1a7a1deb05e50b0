// The pod's veth pair. Created from inside the pod's namespace with its host end placed directly
// in the node's (no link move, which costs the kernel ~15 ms); removed from the node side only:
// deleting the host end deletes the pod end and everything on it, so DEL never needs to enter a
// pod namespace that may already be gone.
import type { VethResource } from '../resource.ts';
import type { IpLink } from '../views.ts';
import type { Finding, KindRules } from './kind.ts';

const isUp = (link: IpLink) => link.flags.includes('UP');

export const vethKind: KindRules<VethResource> = {
  parse(read) {
    const podMac = read.optStr('podMac');
    return {
      kind: 'veth',
      hostName: read.str('hostName'),
      hostMac: read.str('hostMac'),
      podIfName: read.str('podIfName'),
      ...(podMac === undefined ? {} : { podMac }),
      mtu: read.int('mtu'),
    };
  },
  create: (r) => [
    {
      side: 'pod',
      op: {
        op: 'vethAdd',
        name: r.podIfName,
        ...(r.podMac === undefined ? {} : { mac: r.podMac }),
        mtu: r.mtu,
        peer: r.hostName,
        peerMac: r.hostMac,
      },
    },
    { side: 'pod', op: { op: 'linkUp', dev: r.podIfName } },
    { side: 'node', op: { op: 'linkUp', dev: r.hostName } },
  ],
  remove: (r) => [{ side: 'node', op: { op: 'linkDel', dev: r.hostName } }],
  check(r, views) {
    const found: Finding[] = [];
    const host = views.node.links.find((l) => l.ifname === r.hostName);
    if (!host) found.push({ resource: r, problem: `host veth ${r.hostName} missing` });
    else if (!isUp(host)) {
      found.push({
        resource: r,
        problem: `host veth ${r.hostName} down`,
        repair: [{ side: 'node', op: { op: 'linkUp', dev: r.hostName } }],
      });
    }
    if (views.pod) {
      const pod = views.pod.links.find((l) => l.ifname === r.podIfName);
      if (!pod) found.push({ resource: r, problem: `pod interface ${r.podIfName} missing` });
      else if (!isUp(pod)) {
        found.push({
          resource: r,
          problem: `pod interface ${r.podIfName} down`,
          repair: [{ side: 'pod', op: { op: 'linkUp', dev: r.podIfName } }],
        });
      }
    }
    return found;
  },
  identity: (r) => `veth ${r.hostName}`,
  describe: (r) => `veth ${r.hostName} (pod side ${r.podIfName})`,
  removalRank: 2,
  orphans: (node, ctx) =>
    node.links
      .filter((l) => l.kind === 'veth' && l.ifname.startsWith(ctx.vethPrefix))
      .filter((l) => !ctx.owns(`veth ${l.ifname}`))
      .map((l) => ({
        identity: `veth ${l.ifname}`,
        description: `veth ${l.ifname}`,
        remove: [{ side: 'node', op: { op: 'linkDel', dev: l.ifname } }],
      })),
};
