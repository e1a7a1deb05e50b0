// The lab's network skeleton: its namespaces, the VPC namespace's service addresses and the VPC
// test hosts. Safety: every change happens inside a namespace the lab created (`ip -n`,
// `ip netns exec`); the only root-namespace operations are `ip netns add/del` of the lab's own names.
import { readdir } from 'node:fs/promises';
import { runIpBatch } from '../emulator/fabric/kernel-commands.ts';
import { runCommand } from './command.ts';
import {
  HOST_SUBNET,
  IMDS_ADDRESS,
  LAB_IPV6,
  LAB_STATE_ROOT,
  type LabLayout,
  SERVICE_ADDRESS,
} from './layout.ts';

/** Names of all network namespaces (`ip netns list`). */
export async function listNetns(): Promise<string[]> {
  const out = await runCommand('ip', ['netns', 'list']);
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((n) => n !== '');
}

/**
 * Namespaces of lab `name`: every one starting with `<name>-`, except those of another existing
 * lab whose name itself starts with `<name>-` (lab `a` must not take lab `a-b`'s namespaces).
 */
export async function labNetnsNames(name: string): Promise<string[]> {
  const prefix = `${name}-`;
  const others = (await readdir(LAB_STATE_ROOT).catch(() => [] as string[])).filter((o) =>
    o.startsWith(prefix),
  );
  return (await listNetns()).filter(
    (ns) => ns.startsWith(prefix) && !others.some((o) => ns.startsWith(`${o}-`)),
  );
}

export async function deleteNetns(names: readonly string[]): Promise<void> {
  await runIpBatch(
    undefined,
    names.map((n) => `netns del ${n}`),
    true,
  ).catch(async () => {
    // Report only what is still there after the batch ran to its end.
    const left = (await listNetns()).filter((n) => names.includes(n));
    if (left.length > 0) throw new Error(`could not delete network namespaces ${left.join(', ')}`);
  });
}

/** Forwarding on (IPv6 too in a dual-stack lab) and reverse-path filtering off, inside `netns` only. */
async function enableRouting(netns: string, ipv6: boolean): Promise<void> {
  await runCommand('ip', [
    'netns',
    'exec',
    netns,
    'sysctl',
    '-q',
    '-w',
    'net.ipv4.ip_forward=1',
    'net.ipv4.conf.all.rp_filter=0',
    'net.ipv4.conf.default.rp_filter=0',
    ...(ipv6 ? ['net.ipv6.conf.all.forwarding=1'] : []),
  ]);
}

/** Creates the namespaces, the VPC's service addresses and the test hosts. Node links come from the fabric. */
export async function createLabNetwork(layout: LabLayout): Promise<void> {
  const all = [layout.vpcNetns, ...layout.hosts.map((h) => h.netns), ...layout.nodes.map((n) => n.netns)];
  await runIpBatch(
    undefined,
    all.map((n) => `netns add ${n}`),
  );
  for (const ns of all) await runIpBatch(ns, ['link set lo up']);
  const ipv6 = layout.vpc.ipv6Cidr !== undefined;
  await enableRouting(layout.vpcNetns, ipv6);
  for (const node of layout.nodes) await enableRouting(node.netns, ipv6);
  await runIpBatch(layout.vpcNetns, [
    `addr add ${IMDS_ADDRESS}/32 dev lo`,
    `addr add ${SERVICE_ADDRESS}/32 dev lo`,
    ...layout.hosts.flatMap((h) => [
      `link add ${h.vpcLink} type veth peer name eth0 netns ${h.netns}`,
      `addr add ${HOST_SUBNET.gateway}/${HOST_SUBNET.prefixLength} dev ${h.vpcLink}`,
      ...(h.ipv6 === undefined ? [] : [`addr add ${LAB_IPV6.hostSubnet.gateway}/64 dev ${h.vpcLink} nodad`]),
      `link set ${h.vpcLink} up`,
    ]),
  ]);
  for (const h of layout.hosts) {
    await runIpBatch(h.netns, [
      `addr add ${h.ip}/${HOST_SUBNET.prefixLength} dev eth0`,
      ...(h.ipv6 === undefined ? [] : [`addr add ${h.ipv6}/64 dev eth0 nodad`]),
      'link set eth0 up',
      `route add default via ${HOST_SUBNET.gateway}`,
      ...(h.ipv6 === undefined ? [] : [`route add ::/0 via ${LAB_IPV6.hostSubnet.gateway}`]),
    ]);
  }
}
