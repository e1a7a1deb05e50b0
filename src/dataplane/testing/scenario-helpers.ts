// What the dataplane scenarios share: a plan builder, reading problems and rules back, the ENI used.
import assert from 'node:assert/strict';
import type { AttachmentKey } from '../../plan/attachment.ts';
import type { EniLinkSpec } from '../../plan/eni-plan.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import type { Namespace } from '../kernel.ts';
import type { Harness } from './scenarios.ts';

export const SCENARIO_VPC = { vpcCidrs: ['10.0.0.0/16'], snatSource: '10.200.0.1' };

export const NODE: Namespace = { side: 'node' };

function key(containerId: string, ifName: string): AttachmentKey {
  return { network: 'vpcnet', containerId, ifName };
}

export function plan(containerId: string, ip: string, routeTable = 2, ifName = 'eth0'): Resource[] {
  return planRegularPod({
    key: key(containerId, ifName),
    vethPrefix: 'vpc',
    ip,
    eniId: 'eni-1',
    routeTable,
    mtu: 9001,
    snat: true,
  });
}

export function hostVeth(resources: readonly Resource[]): string {
  const veth = resources.find((r) => r.kind === 'veth');
  assert.ok(veth?.kind === 'veth');
  return veth.hostName;
}

export async function problems(h: Harness, netns: string, resources: readonly Resource[]): Promise<string[]> {
  const seen = await h.dataplane.inspect(netns, resources);
  return [
    ...(seen.podUnreachable === undefined ? [] : [`pod unreachable`]),
    ...seen.findings.map((f) => f.problem),
  ];
}

export async function nodeRulesFor(h: Harness, ip: string): Promise<string[]> {
  const node = await h.dataplane.observeNode();
  return node.rules
    .filter((r) => r.src === ip || r.dst === ip)
    .map((r) => `${r.priority} ${r.src} ${r.dst ?? '-'} ${r.table}`)
    .sort();
}

export async function until(check: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const ENI: EniLinkSpec = {
  mac: '02:0e:0e:00:00:01',
  deviceNumber: 1,
  primaryIp: '10.0.1.10',
  subnetCidr: '10.0.1.0/24',
  gateway: '10.0.1.1',
  routeTable: 2,
  mtu: 9001,
};
