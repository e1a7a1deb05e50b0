// A host outside the VPC's CIDRs (e.g. 198.51.100.0/24): a namespace the lab's VPC namespace
// routes to, standing for the internet behind a NAT gateway. It tells what source address traffic
// leaving the VPC carries (the node's after SNAT, a pod's without). Safety: the namespace is named
// `<lab>-<short>` so `lab down` removes it; every change is inside namespaces the lab created.
import { runIpBatch } from '../emulator/fabric/kernel-commands.ts';

export interface OutsideHost {
  readonly netns: string;
  readonly ip: string;
}

/** Adds a host at `<a.b.c>.10/24` whose router is `<a.b.c>.1` on the VPC namespace's side. */
export async function addOutsideHost(
  lab: string,
  vpcNetns: string,
  short: string,
  net24: string,
): Promise<OutsideHost> {
  if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(net24))
    throw new Error(`not the first three octets of a /24: ${net24}`);
  const netns = `${lab}-${short}`;
  const vpcLink = `${short}v`;
  await runIpBatch(undefined, [`netns add ${netns}`]);
  await runIpBatch(vpcNetns, [
    `link add ${vpcLink} type veth peer name eth0 netns ${netns}`,
    `addr add ${net24}.1/24 dev ${vpcLink}`,
    `link set ${vpcLink} up`,
  ]);
  await runIpBatch(netns, [
    'link set lo up',
    `addr add ${net24}.10/24 dev eth0`,
    'link set eth0 up',
    `route add default via ${net24}.1`,
  ]);
  return { netns, ip: `${net24}.10` };
}
