// A route: the pod's link route to its gateway and its default route (pod side), the host route
// to a pod and an ENI table's routes (node side).
import type { RouteResource } from '../resource.ts';
import {
  bareDestination,
  MAIN_TABLE,
  type NamespaceView,
  prefixDestination,
  sameDestination,
} from '../views.ts';
import type { KindRules } from './kind.ts';
import { BRANCH_TABLE_BASE, BRANCH_TABLE_LIMIT } from './trunk-device.ts';

function present(r: RouteResource, view: NamespaceView): boolean {
  return view.routes.some(
    (x) =>
      x.table === r.table &&
      sameDestination(x.dst, r.dst) &&
      x.dev === r.dev &&
      x.gateway === r.via &&
      (x.metric ?? 0) === (r.metric ?? 0),
  );
}

function describe(r: RouteResource): string {
  const dst = bareDestination(r.dst);
  const via = r.via === undefined ? '' : ` via ${r.via}`;
  const table = r.table === MAIN_TABLE ? '' : ` table ${r.table}`;
  const host = r.side === 'node' && r.table === MAIN_TABLE && r.via === undefined ? 'host ' : '';
  const metric = r.metric === undefined ? '' : ` metric ${r.metric}`;
  return `${host}route ${dst}${via} dev ${r.dev}${table}${metric}`;
}

export const routeKind: KindRules<RouteResource> = {
  parse(read) {
    const via = read.optStr('via');
    const metric = read.optInt('metric');
    return {
      kind: 'route',
      side: read.side('side'),
      dst: read.str('dst'),
      dev: read.str('dev'),
      ...(via === undefined ? {} : { via }),
      table: read.int('table'),
      ...(read.optBool('scopeLink') === true ? { scopeLink: true } : {}),
      ...(metric === undefined ? {} : { metric }),
    };
  },
  create: (r) => [
    {
      side: r.side,
      op: {
        op: 'routeAdd',
        dst: r.dst,
        dev: r.dev,
        ...(r.via === undefined ? {} : { via: r.via }),
        table: r.table,
        ...(r.scopeLink === true ? { scopeLink: true } : {}),
        ...(r.metric === undefined ? {} : { metric: r.metric }),
      },
    },
  ],
  remove: (r) =>
    r.side === 'pod'
      ? []
      : [{ side: 'node', op: { op: 'routeDel', dst: r.dst, dev: r.dev, table: r.table } }],
  check(r, views) {
    const view = r.side === 'pod' ? views.pod : views.node;
    if (!view || present(r, view)) return [];
    const [step] = routeKind.create(r);
    return [
      {
        resource: r,
        problem: `${describe(r)} missing`,
        // `replace`: a stray route with the same destination is overwritten, not refused.
        repair:
          step === undefined || step.op.op !== 'routeAdd'
            ? []
            : [{ ...step, op: { ...step.op, replace: true } }],
      },
    ];
  },
  identity: (r) => `route ${r.side} ${r.table} ${bareDestination(r.dst)} ${r.dev}`,
  describe,
  removalRank: 1,
  // Routes in the tables vpcnet allocates to branch bindings (ENI tables are left to their ENIs).
  orphans: (node, ctx) =>
    node.routes
      .filter((r) => r.table >= BRANCH_TABLE_BASE && r.table <= BRANCH_TABLE_LIMIT && r.dev !== undefined)
      .flatMap((r) => {
        const dst = prefixDestination(r.dst);
        const identity = `route node ${r.table} ${bareDestination(r.dst)} ${r.dev}`;
        if (ctx.owns(identity)) return [];
        return [
          {
            identity,
            description: `route ${r.dst} dev ${r.dev} table ${r.table}`,
            remove: [
              {
                side: 'node' as const,
                op: { op: 'routeDel' as const, dst, dev: r.dev ?? '', table: r.table },
              },
            ],
          },
        ];
      }),
};
