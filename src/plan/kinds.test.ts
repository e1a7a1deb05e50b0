// The kinds table as a whole: every kind reads back what it stores, removal order suits the kernel,
// and drift judged against views names each missing piece once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planEniLink } from './eni-plan.ts';
import { createSteps, findDrift, identityOf, parseResourceFields, removalSteps } from './kinds.ts';
import { planRegularPod } from './pod-plan.ts';
import type { Resource } from './resource.ts';

const regular = planRegularPod({
  key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' },
  vethPrefix: 'vpc',
  ip: '10.0.0.5',
  eniId: 'eni-1',
  routeTable: 2,
  mtu: 9001,
  snat: true,
});
// The same pod's second interface (a meta-plugin's second network).
const second = planRegularPod({
  key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth1' },
  vethPrefix: 'vpc',
  ip: '10.0.0.6',
  eniId: 'eni-1',
  routeTable: 2,
  mtu: 9001,
  snat: true,
});
const eni = planEniLink(
  {
    mac: '02:00:00:00:00:01',
    deviceNumber: 1,
    primaryIp: '10.0.1.10',
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  },
  'ens6',
);

/** A field reader over a plain object, as the ledger's is (without its error paths). */
function readerOf(o: Record<string, unknown>) {
  return {
    str: (n: string) => o[n] as string,
    optStr: (n: string) => o[n] as string | undefined,
    int: (n: string) => o[n] as number,
    optInt: (n: string) => o[n] as number | undefined,
    optBool: (n: string) => o[n] as boolean | undefined,
    side: (n: string) => o[n] as 'node' | 'pod',
    oneOf: <T extends string>(n: string, _values: readonly T[]) => o[n] as T,
  };
}

test('every kind reads back exactly what it stores', () => {
  for (const r of [...regular, ...second, ...eni]) {
    const stored = JSON.parse(JSON.stringify(r)) as Record<string, unknown>;
    assert.deepEqual(parseResourceFields(r.kind, readerOf(stored)), r, r.kind);
  }
  assert.equal(parseResourceFields('bogus', readerOf({})), undefined);
});

test('identities are unique within a plan, so ownership can be decided by identity', () => {
  const ids = [...regular, ...eni].map(identityOf);
  assert.equal(new Set(ids).size, ids.length);
  // Two interfaces of one pod share its namespace: nothing of one is the other's.
  const both = [...regular, ...second].map(identityOf);
  assert.equal(new Set(both).size, both.length);
});

test('removal runs rules before routes and addresses before links, and leaves the pod side to its veth', () => {
  const steps = removalSteps(regular);
  assert.deepEqual(
    steps.map((s) => `${s.side} ${s.op.op}`),
    ['node ruleDel', 'node ruleDel', 'node snatDel', 'node routeDel', 'node linkDel'],
  );
});

test('a second interface removes its own rule inside the pod; the rest of its pod side goes with its veth', () => {
  const steps = removalSteps(second);
  assert.deepEqual(
    steps.map((s) => `${s.side} ${s.op.op}`),
    ['pod ruleDel', 'node ruleDel', 'node ruleDel', 'node snatDel', 'node routeDel', 'node linkDel'],
  );
});

test('a second interface routes through a table of its own and yields the main table to the first', () => {
  const podRoutes = second.filter((r) => r.kind === 'route' && r.side === 'pod');
  const table = podRoutes.find((r) => r.kind === 'route' && r.table !== 254);
  assert.ok(table?.kind === 'route' && table.table >= 1000);
  for (const r of podRoutes) {
    if (r.kind === 'route' && r.table === 254)
      assert.equal(r.metric, table.table, 'main-table routes carry a metric');
  }
  assert.ok(
    second.some(
      (r) => r.kind === 'rule' && r.side === 'pod' && r.from === '10.0.0.6/32' && r.table === table.table,
    ),
  );
  assert.ok(
    !regular.some((r) => r.kind === 'route' && r.metric !== undefined),
    'eth0 keeps the plain routes',
  );
});

test('a regular plan starts by creating the veth in the pod; its pod steps touch only the pod interface', () => {
  const steps = regular.flatMap(createSteps);
  assert.equal(steps[0]?.op.op, 'vethAdd');
  for (const s of steps.filter((x) => x.side === 'pod').slice(1)) {
    assert.equal('dev' in s.op ? s.op.dev : undefined, 'eth0', JSON.stringify(s.op));
  }
});

test('drift against empty views names every piece of the plan once, and only the veth needs a rebuild', () => {
  const empty = { links: [], routes: [], rules: [], neighbours: [] };
  const findings = findDrift(regular, {
    node: { ...empty, snatElements: [] },
    pod: { reachable: true, ...empty },
  });
  const unrepairable = findings.filter((f) => f.repair === undefined).map((f) => f.problem);
  assert.deepEqual(unrepairable, [
    `host veth ${(regular[1] as Extract<Resource, { kind: 'veth' }>).hostName} missing`,
    'pod interface eth0 missing',
  ]);
  const kinds = new Set(findings.map((f) => f.resource.kind));
  assert.deepEqual([...kinds].sort(), ['ifAddress', 'neighbour', 'route', 'rule', 'snat', 'veth']);
});
