import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AttachmentKey } from './attachment.ts';
import {
  egressVethName,
  IPV6_ROUTE_METRIC,
  POD_GATEWAY_V6,
  planIpv6Pod,
  V4_EGRESS_IF,
} from './ipv6-pod-plan.ts';
import { validateOp } from './kernel-op.ts';
import { createSteps, removalSteps } from './kinds.ts';
import { hostVethMac, hostVethName } from './names.ts';
import { POD_GATEWAY } from './pod-plan.ts';
import type { Resource } from './resource.ts';

const KEY: AttachmentKey = { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' };
const IP = '2001:db8:5e00:0:1::5';
const base = { key: KEY, vethPrefix: 'vpc', ip: IP, eniId: 'eni-1', mtu: 9001 };

test('an IPv6 pod: its /128 without DAD, default via fe80::1 answered by the host MAC, a /128 host route; no rules, no SNAT', () => {
  const host = hostVethName(KEY, 'vpc');
  const mac = hostVethMac(KEY);
  const plan = planIpv6Pod(base);
  assert.deepEqual(
    plan.filter((r) => r.kind !== 'veth'),
    [
      { kind: 'vpcAddress', ip: IP, eniId: 'eni-1' },
      { kind: 'ipv6Address', side: 'pod', dev: 'eth0', cidr: `${IP}/128` },
      {
        kind: 'route',
        side: 'pod',
        dst: 'default',
        dev: 'eth0',
        via: POD_GATEWAY_V6,
        table: 254,
        metric: 1024,
      },
      { kind: 'neighbour', side: 'pod', dev: 'eth0', ip: POD_GATEWAY_V6, lladdr: mac },
      { kind: 'route', side: 'node', dst: `${IP}/128`, dev: host, table: 254, metric: IPV6_ROUTE_METRIC },
    ],
  );
  assert.ok(!plan.some((r) => r.kind === 'rule' || r.kind === 'snat'));
  // Every step is one the drivers accept, and the address goes in without DAD.
  const steps = plan.flatMap(createSteps);
  for (const s of steps) validateOp(s.op);
  assert.ok(steps.some((s) => s.op.op === 'addrAdd' && s.op.nodad === true && s.side === 'pod'));
});

test("IPv4 egress: a second veth v4if0 named after the key but not the first's, its /32 with the IPv4 gateway routes, the node's route to it", () => {
  const plan = planIpv6Pod({ ...base, v4EgressIp: '169.254.172.9' });
  const veths = plan.filter((r): r is Extract<Resource, { kind: 'veth' }> => r.kind === 'veth');
  assert.deepEqual(
    veths.map((v) => [v.hostName, v.podIfName]),
    [
      [hostVethName(KEY, 'vpc'), 'eth0'],
      [egressVethName(KEY, 'vpc'), V4_EGRESS_IF],
    ],
  );
  assert.notEqual(veths[0]?.hostMac, veths[1]?.hostMac);
  const egressHost = egressVethName(KEY, 'vpc');
  assert.equal(egressHost.length, 15);
  assert.ok(egressHost.startsWith('vpc'), 'collected like any host veth when no record owns it');
  const egress = plan.filter((r) => 'dev' in r && (r.dev === V4_EGRESS_IF || r.dev === egressHost));
  assert.deepEqual(egress, [
    { kind: 'ifAddress', side: 'pod', dev: V4_EGRESS_IF, cidr: '169.254.172.9/32' },
    { kind: 'route', side: 'pod', dst: `${POD_GATEWAY}/32`, dev: V4_EGRESS_IF, scopeLink: true, table: 254 },
    { kind: 'route', side: 'pod', dst: 'default', dev: V4_EGRESS_IF, via: POD_GATEWAY, table: 254 },
    { kind: 'neighbour', side: 'pod', dev: V4_EGRESS_IF, ip: POD_GATEWAY, lladdr: veths[1]?.hostMac },
    { kind: 'route', side: 'node', dst: '169.254.172.9/32', dev: egressHost, table: 254, scopeLink: true },
  ]);
  // Removal takes both veths (and the node's routes), nothing in the pod.
  const removal = removalSteps(plan);
  assert.deepEqual(
    removal.filter((s) => s.op.op === 'linkDel').map((s) => s.op.op === 'linkDel' && s.op.dev),
    [hostVethName(KEY, 'vpc'), egressHost],
  );
  assert.ok(removal.every((s) => s.side === 'node'));
});

test("another interface of an IPv6 pod yields to the primary's default route", () => {
  const plan = planIpv6Pod({ ...base, key: { ...KEY, ifName: 'net1' } });
  const defaults = plan.filter((r) => r.kind === 'route' && r.dst === 'default');
  assert.equal(defaults.length, 1);
  const metric = defaults[0]?.kind === 'route' ? defaults[0].metric : undefined;
  assert.ok(metric !== undefined && metric > IPV6_ROUTE_METRIC, `metric ${metric}`);
});
