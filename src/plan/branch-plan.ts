// The plans of a pod with its own security groups. A sandbox's attachment owns its veth and pod
// side (as a regular pod's, with the branch ENI's address and no VPC address of the pool); the
// pod's branch binding owns what reaches the branch ENI, pointed at the holder's veth:
//   strict   all the pod's traffic goes through the branch ENI (its security groups apply to
//            everything): rules `iif <branch device>` and `iif <holder veth>` lookup the binding's
//            table, which routes the pod's address to the holder's veth;
//   standard pod-to-pod on the node and the kubelet's probes stay local: the main table routes
//            the pod's address to the holder's veth, `to <pod>` lookup main, `from <pod>` lookup
//            the binding's table (as the upstream's two modes do).
import type { AttachmentKey } from './attachment.ts';
import type { BindingKey, BranchBinding } from './binding.ts';
import { RULE_PRIORITY_FROM_POD, RULE_PRIORITY_TO_POD } from './kinds/rule.ts';
import { BRANCH_DEVICE_PREFIX, RULE_PRIORITY_BRANCH } from './kinds/trunk-device.ts';
import { hostVethMac, hostVethName, keyedName, podVethMac } from './names.ts';
import { podSideRouting } from './pod-plan.ts';
import type { Resource } from './resource.ts';
import { MAIN_TABLE } from './views.ts';

export { BRANCH_TABLE_BASE, BRANCH_TABLE_LIMIT, RULE_PRIORITY_BRANCH } from './kinds/trunk-device.ts';

/** The branch device's name: derived from the binding (pod UID + ENI), never from the VLAN ID. */
export function branchDeviceName(key: BindingKey): string {
  return keyedName(BRANCH_DEVICE_PREFIX, ['branch', key.podUid, key.eniId]);
}

export interface BranchAttachmentSpec {
  readonly key: AttachmentKey;
  readonly vethPrefix: string;
  /** The branch ENI's address. */
  readonly ip: string;
  readonly mtu: number;
}

/** What one sandbox of a branch-ENI pod owns itself: its veth and everything in its namespace. */
export function planBranchAttachment(spec: BranchAttachmentSpec): Resource[] {
  const { key, ip } = spec;
  const hostMac = hostVethMac(key);
  const ifName = key.ifName;
  return [
    {
      kind: 'veth',
      hostName: hostVethName(key, spec.vethPrefix),
      hostMac,
      podIfName: ifName,
      podMac: podVethMac(key),
      mtu: spec.mtu,
    },
    ...podSideRouting(ifName, ip, hostMac),
  ];
}

/**
 * What the binding owns in the kernel with `holderVeth` holding it. Without a holder (no live
 * sandbox has a veth), only what needs no veth: the device, the table's routes and, in strict mode,
 * the device's rule.
 */
export function planBranchShared(b: BranchBinding, holderVeth: string | undefined): Resource[] {
  const dev = branchDeviceName(b.key);
  const t = b.table;
  const out: Resource[] = [
    {
      kind: 'trunkDevice',
      name: dev,
      parent: b.trunkDev,
      mac: b.mac,
      mtu: b.mtu,
      vlanId: b.vlanId,
      driver: b.driver,
    },
    { kind: 'route', side: 'node', dst: `${b.gateway}/32`, dev, table: t, scopeLink: true },
    { kind: 'route', side: 'node', dst: 'default', dev, via: b.gateway, table: t },
  ];
  const podCidr = `${b.ip}/32`;
  if (b.mode === 'strict') {
    out.push({ kind: 'rule', priority: RULE_PRIORITY_BRANCH, iif: dev, table: t });
    if (holderVeth !== undefined) {
      out.push(
        { kind: 'route', side: 'node', dst: podCidr, dev: holderVeth, table: t, scopeLink: true },
        { kind: 'rule', priority: RULE_PRIORITY_BRANCH, iif: holderVeth, table: t },
      );
    }
  } else {
    out.push(
      { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: podCidr, table: MAIN_TABLE },
      { kind: 'rule', priority: RULE_PRIORITY_FROM_POD, from: podCidr, table: t },
    );
    if (holderVeth !== undefined) {
      out.push({
        kind: 'route',
        side: 'node',
        dst: podCidr,
        dev: holderVeth,
        table: MAIN_TABLE,
        scopeLink: true,
      });
    }
  }
  return out;
}
