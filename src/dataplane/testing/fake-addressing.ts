// What one namespace's addresses, routes, neighbours and rules do with an operation, in the fake
// kernel: the kernel's answers where vpcnet depends on them (adding what exists fails, deleting
// what is gone fails with a "gone" answer, an interface's last address takes its routes along).
import type { KernelOp } from '../../plan/kernel-op.ts';
import { type FakeLink, type FakeNamespace, type FakeRoute, norm, sameRule } from './fake-namespace.ts';

export const EXISTS = 'RTNETLINK answers: File exists';

/** A kernel's refusal of one operation (the run goes on or stops, as its mode says). */
export class OpError extends Error {}

export function linkOf(space: FakeNamespace, dev: string): FakeLink {
  const link = space.links.get(dev);
  if (!link) throw new OpError(`Cannot find device "${dev}"`);
  return link;
}

/** Removing an interface's last IPv4 address flushes its routes and neighbours, as in the kernel. */
export function deleteAddressIn(space: FakeNamespace, dev: string, cidr: string): void {
  const link = space.links.get(dev);
  if (!link?.addresses.delete(cidr) || link.addresses.size > 0) return;
  space.routes = space.routes.filter((r) => r.dev !== dev);
  space.neighbours = space.neighbours.filter((n) => n.dev !== dev);
}

/** A default route's family is its gateway's. */
const isIPv6Route = (dst: string, via: string | undefined) =>
  dst.includes(':') || via?.includes(':') === true;

type AddressingOp = Extract<
  KernelOp,
  { op: 'addrAdd' | 'addrDel' | 'routeAdd' | 'routeDel' | 'neighAdd' | 'ruleAdd' | 'ruleDel' }
>;

export function applyToNamespace(space: FakeNamespace, op: AddressingOp): void {
  switch (op.op) {
    case 'addrAdd': {
      const link = linkOf(space, op.dev);
      if (link.addresses.has(op.cidr) && op.replace !== true) throw new OpError(EXISTS);
      link.addresses.add(op.cidr);
      return;
    }
    case 'addrDel':
      if (!linkOf(space, op.dev).addresses.has(op.cidr)) {
        throw new OpError('Error: ipv4: Address not found.');
      }
      deleteAddressIn(space, op.dev, op.cidr);
      return;
    case 'routeAdd': {
      linkOf(space, op.dev);
      const dst = norm(op.dst);
      const v6 = isIPv6Route(dst, op.via);
      // An IPv6 route added without a metric gets the kernel's 1024.
      const metric = op.metric ?? (v6 ? 1024 : 0);
      // One route per family, table, destination and metric, whatever the device (as the kernel's FIB).
      const same = (r: FakeRoute) =>
        r.table === op.table &&
        r.dst === dst &&
        isIPv6Route(r.dst, r.via) === v6 &&
        (r.metric ?? 0) === metric;
      if (space.routes.some(same) && op.replace !== true) throw new OpError(EXISTS);
      space.routes = space.routes.filter((r) => !same(r));
      space.routes.push({
        table: op.table,
        dst,
        dev: op.dev,
        ...(op.via === undefined ? {} : { via: op.via }),
        ...(op.scopeLink === true ? { scopeLink: true } : {}),
        ...(metric === 0 ? {} : { metric }),
      });
      return;
    }
    case 'routeDel': {
      const dst = norm(op.dst);
      const i = space.routes.findIndex((r) => r.table === op.table && r.dst === dst && r.dev === op.dev);
      if (i < 0) throw new OpError('RTNETLINK answers: No such process');
      space.routes.splice(i, 1);
      return;
    }
    case 'neighAdd': {
      linkOf(space, op.dev);
      const existing = space.neighbours.find((n) => n.dev === op.dev && n.ip === op.ip);
      if (existing && op.replace !== true) throw new OpError(EXISTS);
      if (existing) {
        existing.lladdr = op.lladdr;
        existing.permanent = true;
      } else space.neighbours.push({ dev: op.dev, ip: op.ip, lladdr: op.lladdr, permanent: true });
      return;
    }
    case 'ruleAdd':
      if (space.rules.some((r) => sameRule(r, op.rule))) throw new OpError(EXISTS);
      space.rules.push({ ...op.rule });
      return;
    case 'ruleDel': {
      const i = space.rules.findIndex((r) => sameRule(r, op.rule));
      if (i < 0) throw new OpError('RTNETLINK answers: No such file or directory');
      space.rules.splice(i, 1);
      return;
    }
  }
}
