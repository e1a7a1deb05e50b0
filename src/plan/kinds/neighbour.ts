// A permanent neighbour entry: the pod's gateway 169.254.1.1 answered by the host veth's MAC, so
// the pod never ARPs for a gateway that does not exist.
import type { NeighbourResource } from '../resource.ts';
import type { KindRules } from './kind.ts';

export const neighbourKind: KindRules<NeighbourResource> = {
  parse: (read) => ({
    kind: 'neighbour',
    side: read.side('side'),
    dev: read.str('dev'),
    ip: read.str('ip'),
    lladdr: read.str('lladdr'),
  }),
  create: (r) => [{ side: r.side, op: { op: 'neighAdd', dev: r.dev, ip: r.ip, lladdr: r.lladdr } }],
  // Goes with its link (the pod's interface).
  remove: () => [],
  check(r, views) {
    const view = r.side === 'pod' ? views.pod : views.node;
    if (!view) return [];
    const entry = view.neighbours.find((n) => n.dst === r.ip && (n.dev === undefined || n.dev === r.dev));
    let problem: string | undefined;
    if (!entry) problem = `neighbour ${r.ip} missing`;
    else if (!entry.state.includes('PERMANENT')) problem = `neighbour ${r.ip} not permanent`;
    else if (entry.lladdr !== r.lladdr) {
      problem = `neighbour ${r.ip} points to ${entry.lladdr ?? 'nothing'}, not ${r.lladdr}`;
    }
    if (problem === undefined) return [];
    return [
      {
        resource: r,
        problem,
        repair: [
          { side: r.side, op: { op: 'neighAdd', dev: r.dev, ip: r.ip, lladdr: r.lladdr, replace: true } },
        ],
      },
    ];
  },
  identity: (r) => `neighbour ${r.side} ${r.dev} ${r.ip}`,
  describe: (r) => `neighbour ${r.ip} lladdr ${r.lladdr} on ${r.dev}`,
  removalRank: 1,
};
