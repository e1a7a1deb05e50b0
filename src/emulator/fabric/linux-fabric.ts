// The lab's fabric: turns the emulator's ENI state into real links between network namespaces.
// Each attached ENI is a veth pair: the VPC side (named from the ENI id) lives in the VPC namespace
// and carries the subnet gateway as a /32 so it answers the node's ARP for it; the node side is
// eth<deviceIndex> in the instance's namespace, with the ENI's MAC. Every address of the ENI is
// routed to its link with a permanent neighbour entry, because the real VPC delivers to the
// ENI's MAC without ARP. Branch ENIs ride on their trunk's link (trunk-branches.ts).

import { parseCidr } from '../../infra/ipv4.ts';
import { type ProcessRunner, runToSuccess } from '../../infra/process.ts';
import type { BranchOnTrunk, Fabric, FabricEni } from '../api.ts';
import { ipv6AttachLines, ipv6RouteLines, ipv6RouteRemovals } from './ipv6-links.ts';
import {
  type IpBatchRunner,
  runIpBatch,
  runRemovals,
  type SysctlWriter,
  writeSysctls,
} from './kernel-commands.ts';
import { vpcLinkName } from './link-names.ts';
import { TrafficCounters } from './traffic-counters.ts';
import { TrunkBranches, type TrunkDriver } from './trunk-branches.ts';

export interface LinuxFabricOptions {
  /**
   * Namespace of the VPC side. Always named, also when the emulator runs inside it: a fabric
   * started in the wrong place then fails instead of changing the namespace it happens to be in.
   */
  readonly vpcNetns: string;
  /** How branch ENIs ride on a trunk: 802.1q tags ('vlan', the default) or MACs ('macvlan'). */
  readonly trunkMode?: TrunkDriver;
  readonly ip?: IpBatchRunner;
  readonly sysctl?: SysctlWriter;
  /** Runs commands whose output the fabric reads (counters) and nft scripts; must fail unless they succeed. */
  readonly run?: ProcessRunner;
}

export class LinuxFabric implements Fabric {
  readonly trunkMode: TrunkDriver;
  private readonly vpcNetns: string;
  private readonly ip: IpBatchRunner;
  private readonly sysctl: SysctlWriter;
  private readonly branches: TrunkBranches;
  private readonly traffic: TrafficCounters;

  constructor(opts: LinuxFabricOptions) {
    this.vpcNetns = opts.vpcNetns;
    this.trunkMode = opts.trunkMode ?? 'vlan';
    this.ip = opts.ip ?? runIpBatch;
    this.sysctl = opts.sysctl ?? writeSysctls;
    const run = opts.run ?? runToSuccess;
    const shared = { vpcNetns: this.vpcNetns, mode: this.trunkMode, run };
    this.branches = new TrunkBranches({ ...shared, ip: this.ip, sysctl: this.sysctl });
    this.traffic = new TrafficCounters(shared);
  }

  async eniAttached(netns: string, deviceIndex: number, eni: FabricEni): Promise<void> {
    const vpcSide = vpcLinkName(eni.eniId);
    const nodeSide = `eth${deviceIndex}`;
    try {
      await this.attach(netns, deviceIndex, eni, vpcSide, nodeSide);
    } catch (err) {
      // Leave no half-made link behind: the pair goes with its VPC side.
      await runRemovals(this.ip, this.vpcNetns, [`link del ${vpcSide}`]).catch(() => undefined);
      throw err;
    }
  }

  private async attach(
    netns: string,
    deviceIndex: number,
    eni: FabricEni,
    vpcSide: string,
    nodeSide: string,
  ): Promise<void> {
    await this.ip(this.vpcNetns, [
      `link add ${vpcSide} type veth peer name ${nodeSide} netns ${netns} address ${eni.mac}`,
      `addr replace ${eni.gateway}/32 dev ${vpcSide}`,
    ]);
    // The VPC router answers ARP for every address it routes to another link, as the real VPC
    // does within a subnet, so a node reaches another node of its subnet on-link; at once
    // (proxy ARP replies are otherwise delayed up to 0.8 s).
    await this.sysctl(this.vpcNetns, {
      [`net.ipv4.conf.${vpcSide}.proxy_arp`]: '1',
      [`net.ipv4.neigh.${vpcSide}.proxy_delay`]: '0',
    });
    await this.ip(this.vpcNetns, [`link set ${vpcSide} up`, ...routeLines(vpcSide, eni, [eni.primaryIp])]);
    const ipv6 = ipv6AttachLines(eni, vpcSide, nodeSide, deviceIndex);
    if (ipv6.vpc.length > 0) await this.ip(this.vpcNetns, ipv6.vpc);
    const node = [`link set ${nodeSide} up`];
    if (deviceIndex === 0) {
      // What the instance's OS does by DHCP on its primary interface.
      node.push(
        `addr add ${eni.primaryIp}/${parseCidr(eni.subnetCidr).prefixLength} dev ${nodeSide}`,
        `route replace default via ${eni.gateway} dev ${nodeSide}`,
      );
    }
    await this.ip(netns, [...node, ...ipv6.node]);
  }

  async eniDetached(_netns: string, _deviceIndex: number, eni: FabricEni): Promise<void> {
    // Deleting one end removes the pair, and with it every route through the VPC side.
    await runRemovals(this.ip, this.vpcNetns, [`link del ${vpcLinkName(eni.eniId)}`]);
    await this.branches.trunkDetached(eni);
    this.traffic.forget(eni.eniId);
  }

  async addressesAssigned(eni: FabricEni, ips: readonly string[]): Promise<void> {
    await this.ip(this.vpcNetns, routeLines(vpcLinkName(eni.eniId), eni, ips));
  }

  async addressesUnassigned(eni: FabricEni, ips: readonly string[]): Promise<void> {
    const vpcSide = vpcLinkName(eni.eniId);
    const lines: string[] = [];
    for (const ip of ips) {
      if (ip.includes('/')) lines.push(`route del ${ip} dev ${vpcSide}`);
      else lines.push(`route del ${ip}/32 dev ${vpcSide}`, `neigh del ${ip} dev ${vpcSide}`);
    }
    await runRemovals(this.ip, this.vpcNetns, lines);
  }

  async ipv6RoutesAdded(eni: FabricEni, cidrs: readonly string[]): Promise<void> {
    await this.ip(this.vpcNetns, ipv6RouteLines(vpcLinkName(eni.eniId), eni, cidrs));
  }

  async ipv6RoutesRemoved(eni: FabricEni, cidrs: readonly string[]): Promise<void> {
    await runRemovals(this.ip, this.vpcNetns, ipv6RouteRemovals(vpcLinkName(eni.eniId), cidrs));
  }

  branchAssociated(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void> {
    return this.branches.associated(trunk, vlanId, branch);
  }

  async branchDisassociated(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void> {
    await this.traffic.retire(trunk, branch);
    await this.branches.disassociated(trunk, vlanId, branch);
  }

  receivedPackets(
    enis: readonly FabricEni[],
    branches: readonly BranchOnTrunk[],
  ): Promise<Map<string, number>> {
    return this.traffic.read(enis, branches);
  }
}

/** An address is routed to the ENI's link and resolves to the ENI's MAC; a prefix goes via the primary IP. */
function routeLines(vpcSide: string, eni: FabricEni, ips: readonly string[]): string[] {
  const lines: string[] = [];
  for (const ip of ips) {
    if (ip.includes('/')) {
      lines.push(`route replace ${ip} via ${eni.primaryIp} dev ${vpcSide} onlink`);
    } else {
      lines.push(
        `route replace ${ip}/32 dev ${vpcSide}`,
        `neigh replace ${ip} lladdr ${eni.mac} dev ${vpcSide} nud permanent`,
      );
    }
  }
  return lines;
}
