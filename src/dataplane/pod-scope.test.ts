import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { planIpv6Pod } from '../plan/ipv6-pod-plan.ts';
import { findDrift } from '../plan/kinds.ts';
import { MAIN_TABLE, planRegularPod, podInterfaceTable } from '../plan/pod-plan.ts';
import type { Resource } from '../plan/resource.ts';
import type { IpLink, IpNeighbour, IpRoute, IpRule, NamespaceView, NodeView } from '../plan/views.ts';
import { Dataplane } from './dataplane.ts';
import { podScopeOf, withinScope } from './pod-scope.ts';
import { FakeKernel } from './testing/fake-kernel.ts';

const regular = (ifName: string, ip: string) =>
  planRegularPod({
    key: { network: 'vpcnet', containerId: 'c1', ifName },
    vethPrefix: 'vpc',
    ip,
    eniId: 'eni-1',
    routeTable: 2,
    mtu: 9001,
    snat: false,
  });

test("a pod's first interface is read alone, with the main table's routes through it and no rule", () => {
  assert.deepEqual(podScopeOf(regular('eth0', '10.0.0.5')), {
    links: ['eth0'],
    routes: [{ table: MAIN_TABLE, dev: 'eth0' }],
    rulePriorities: [],
  });
});

test("another interface adds its own table's routes and its from-rule's priority", () => {
  assert.deepEqual(podScopeOf(regular('net1', '10.0.0.6')), {
    links: ['net1'],
    routes: [
      { table: MAIN_TABLE, dev: 'net1' },
      { table: podInterfaceTable('net1'), dev: 'net1' },
    ],
    rulePriorities: [1536],
  });
});

const ipv6 = () =>
  planIpv6Pod({
    key: { network: 'vpcnet', containerId: 'c6', ifName: 'eth0' },
    vethPrefix: 'vpc',
    ip: '2001:db8::5',
    eniId: 'eni-1',
    mtu: 9001,
    v4EgressIp: '169.254.172.5',
  });

test("an IPv6 pod's scope has its egress interface too", () => {
  const scope = podScopeOf(ipv6());
  assert.deepEqual(scope.links, ['eth0', 'v4if0']);
  assert.ok(scope.routes.some((r) => r.dev === 'v4if0'));
});

/** Pods of every plan shape, made in the fake kernel: their namespace views and resources. */
async function madePods(): Promise<{
  node: NodeView;
  pods: { view: NamespaceView; resources: Resource[] }[];
}> {
  const kernel = new FakeKernel();
  const dp = new Dataplane(kernel);
  const two = [...regular('eth0', '10.0.0.5'), ...regular('net1', '10.0.0.6')];
  const pods: { view: NamespaceView; resources: Resource[] }[] = [];
  for (const [i, resources] of [two, ipv6()].entries()) {
    const path = `/var/run/netns/scope-${i}`;
    kernel.ns(path);
    await dp.create(path, resources);
    const view = await kernel.readPod(path);
    assert.ok(view.reachable);
    pods.push({ view, resources });
  }
  return { node: await kernel.readNode(), pods };
}

/** What a pod with NET_ADMIN may put in its namespace beside vpcnet's (or instead of it). */
const foreignLink = fc.record({
  ifname: fc.constantFrom('eth0', 'net1', 'v4if0', 'x0', 'lo'),
  address: fc.constant('02:00:00:00:00:09'),
  flags: fc.subarray(['UP', 'LOWER_UP']),
  mtu: fc.constant(1500),
  addresses: fc.array(
    fc.record({
      family: fc.constant('inet'),
      local: fc.constantFrom('10.0.0.5', '10.9.9.9'),
      prefixlen: fc.constant(32),
    }),
    { maxLength: 2 },
  ),
}) as fc.Arbitrary<IpLink>;
const foreignRoute = fc.record({
  dst: fc.constantFrom('default', '169.254.1.1', '100.10.0.1', '::/0'),
  gateway: fc.constantFrom('169.254.1.1', '10.9.9.1', 'fe80::1'),
  dev: fc.constantFrom('eth0', 'net1', 'v4if0', 'x0'),
  table: fc.constantFrom(MAIN_TABLE, 100, podInterfaceTable('net1')),
  metric: fc.constantFrom(0, 1024, podInterfaceTable('net1')),
}) as fc.Arbitrary<IpRoute>;
const foreignRule = fc.record({
  priority: fc.constantFrom(100, 1536, 32766),
  src: fc.constantFrom('all', '10.0.0.6', '10.9.9.9'),
  table: fc.constantFrom(MAIN_TABLE, podInterfaceTable('net1'), 7),
}) as fc.Arbitrary<IpRule>;
const foreignNeighbour = fc.record({
  dst: fc.constantFrom('169.254.1.1', 'fe80::1', '10.9.9.1'),
  dev: fc.constantFrom('eth0', 'x0', 'v4if0'),
  lladdr: fc.constantFrom('02:00:00:00:00:01', '02:00:00:00:00:09'),
  state: fc.constantFrom(['PERMANENT'], ['REACHABLE']),
}) as fc.Arbitrary<IpNeighbour>;

/** Each list with some of its items taken out and the foreign ones added. */
function changed<T>(items: readonly T[], drop: readonly boolean[], add: readonly T[]): T[] {
  return [...items.filter((_, i) => drop[i % Math.max(1, drop.length)] !== true), ...add];
}

test('judging a pod on its scoped view finds exactly what judging its whole namespace finds, whatever the pod did there', async () => {
  const { node, pods } = await madePods();
  fc.assert(
    fc.property(
      fc.nat(pods.length - 1),
      fc.array(fc.boolean(), { maxLength: 12 }),
      fc.array(foreignLink, { maxLength: 3 }),
      fc.array(foreignRoute, { maxLength: 6 }),
      fc.array(foreignRule, { maxLength: 3 }),
      fc.array(foreignNeighbour, { maxLength: 3 }),
      (which, drop, links, routes, rules, neighbours) => {
        const pod = pods[which]!;
        const whole: NamespaceView = {
          links: changed(pod.view.links, drop, links),
          routes: changed(pod.view.routes, drop.slice(1), routes),
          rules: changed(pod.view.rules, drop.slice(2), rules),
          neighbours: changed(pod.view.neighbours, drop.slice(3), neighbours),
        };
        const scoped = withinScope(whole, podScopeOf(pod.resources));
        const problems = (view: NamespaceView) =>
          findDrift(pod.resources, { node, pod: { reachable: true, ...view } }).map((f) => f.problem);
        assert.deepEqual(problems(scoped), problems(whole));
      },
    ),
  );
});
