// The kernel as values a test can compare: the whole fake kernel as text, and the identities of
// the node's pod-shaped objects against those an attachment owns.
import type { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { identityOf } from '../../plan/kinds.ts';
import { MAIN_TABLE } from '../../plan/pod-plan.ts';
import type { NodeView } from '../../plan/views.ts';

/** The whole fake kernel (node and every pod namespace) as comparable text. */
export function kernelState(kernel: FakeKernel): string {
  const spaces = [...kernel.namespaces].map(([name, ns]) => ({
    name,
    links: [...ns.links.values()]
      .map((l) => ({ ...l, addresses: [...l.addresses].sort() }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    routes: ns.routes.map((r) => JSON.stringify(r)).sort(),
    rules: ns.rules.map((r) => JSON.stringify(r)).sort(),
    neighbours: ns.neighbours.map((x) => JSON.stringify(x)).sort(),
  }));
  return JSON.stringify({ spaces, snat: kernel.snatElements() });
}

/** Identities of the node's pod-shaped objects: veths, host routes on them, rules, SNAT elements. */
export function nodeIdentities(view: NodeView): string[] {
  const veths = view.links.filter((l) => l.kind === 'veth').map((l) => l.ifname);
  const cidr = (ip: string | undefined, len: number | undefined) =>
    ip === undefined || ip === 'all' ? '-' : `${ip}/${len ?? 32}`;
  return [
    ...veths.map((v) => `veth ${v}`),
    ...view.routes
      .filter((r) => r.table === MAIN_TABLE && veths.includes(r.dev ?? ''))
      .map((r) => `route node ${r.table} ${r.dst} ${r.dev}`),
    ...view.rules.map(
      (r) =>
        `rule ${r.priority} ${cidr(r.src, r.srclen)} ${cidr(r.dst, r.dstlen)} ${r.iif ?? '-'} ${r.table}`,
    ),
    ...(view.snatElements ?? []).map((ip) => `snat ${ip}`),
  ].sort();
}

/** Identities of what an attachment owns on the node. */
export const nodeOwned = (att: Attachment) =>
  att.resources
    .filter(
      (r) =>
        r.kind === 'veth' ||
        r.kind === 'rule' ||
        r.kind === 'snat' ||
        (r.kind === 'route' && r.side === 'node'),
    )
    .map(identityOf);
