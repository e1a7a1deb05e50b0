// Branch ENIs on a trunk ENI's link, on the VPC side. The VPC routes a branch's address to the
// trunk's link with a permanent neighbour entry for the branch's MAC and answers ARP for the
// subnet gateway on that path, in one of two trunk modes:
// - 'vlan': frames are 802.1q-tagged with the branch's VLAN ID, as in the real VPC. The VPC side
//   has a VLAN sub-interface of the trunk's link per branch (named from the branch ENI), carrying
//   the gateway /32 with proxy ARP; the branch's route and neighbour entry are on it.
// - 'macvlan': for kernels without 8021q. Frames are untagged and told apart by the branch's MAC
//   (the node puts a macvlan device with that MAC on the trunk); route and neighbour are on the
//   trunk's link itself, which already answers for the gateway. An nftables netdev ingress chain
//   on the trunk's link counts frames per branch MAC, so traffic can still be told apart.
import { CommandFailed, type ProcessRunner } from '../../infra/process.ts';
import type { TrunkDriver } from '../../infra/trunk-driver.ts';
import type { FabricEni } from '../api.ts';
import { type IpBatchRunner, nftOnlyAlreadyGone, runRemovals, type SysctlWriter } from './kernel-commands.ts';
import { vpcLinkName } from './link-names.ts';

export type { TrunkDriver };

export interface BranchDeps {
  readonly vpcNetns: string;
  readonly mode: TrunkDriver;
  readonly ip: IpBatchRunner;
  readonly sysctl: SysctlWriter;
  /** Runs nft scripts; fails (CommandFailed) unless they succeed. */
  readonly run: ProcessRunner;
}

/** The nftables table (netdev family) of the fabric in the VPC namespace ('macvlan' mode). */
export const NFT_TABLE = 'vpcnet_fabric';
const NFT_MAP = 'branch_counters';

/** VLAN sub-interface of a branch in the VPC namespace: `b` + 12 hex digits of its ENI id. */
export function branchLinkName(branchEniId: string): string {
  return `b${vpcLinkName(branchEniId).slice(1)}`;
}

/** Name of a branch's nft counter ('macvlan' mode). */
export function branchCounterName(branchEniId: string): string {
  return `branch_${vpcLinkName(branchEniId).slice(1)}`;
}

function ingressChain(trunkLink: string): string {
  return `ingress_${trunkLink}`;
}

export class TrunkBranches {
  readonly #deps: BranchDeps;
  /** Trunk links that have an ingress chain ('macvlan' mode). */
  readonly #chains = new Set<string>();

  constructor(deps: BranchDeps) {
    this.#deps = deps;
  }

  get mode(): TrunkDriver {
    return this.#deps.mode;
  }

  async associated(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void> {
    if (this.#deps.mode === 'vlan') await this.#vlanAssociated(trunk, vlanId, branch);
    else await this.#macvlanAssociated(trunk, branch);
  }

  /** Removes exactly what `associated` made; what is already gone is fine. */
  async disassociated(trunk: FabricEni, _vlanId: number, branch: FabricEni): Promise<void> {
    const { vpcNetns, ip } = this.#deps;
    if (this.#deps.mode === 'vlan') {
      // The sub-interface takes its address, route and neighbour entry with it.
      await runRemovals(ip, vpcNetns, [`link del ${branchLinkName(branch.eniId)}`]);
      return;
    }
    const trunkLink = vpcLinkName(trunk.eniId);
    await runRemovals(ip, vpcNetns, [
      `route del ${branch.primaryIp}/32 dev ${trunkLink}`,
      `neigh del ${branch.primaryIp} dev ${trunkLink}`,
    ]);
    // One command each: a batch fails whole when one of its objects is already gone.
    await this.#nftRemoval(`delete element netdev ${NFT_TABLE} ${NFT_MAP} { ${branch.mac} }`);
    await this.#nftRemoval(`delete counter netdev ${NFT_TABLE} ${branchCounterName(branch.eniId)}`);
  }

  /** The trunk's link is going away ('macvlan' mode: its ingress chain goes too). */
  async trunkDetached(trunk: FabricEni): Promise<void> {
    const trunkLink = vpcLinkName(trunk.eniId);
    if (!this.#chains.has(trunkLink)) return;
    const chain = ingressChain(trunkLink);
    this.#chains.delete(trunkLink);
    await this.#nftRemoval(
      `flush chain netdev ${NFT_TABLE} ${chain}\ndelete chain netdev ${NFT_TABLE} ${chain}`,
    );
  }

  async #vlanAssociated(trunk: FabricEni, vlanId: number, branch: FabricEni): Promise<void> {
    const { vpcNetns, ip, sysctl } = this.#deps;
    const sub = branchLinkName(branch.eniId);
    try {
      await ip(vpcNetns, [`link add link ${vpcLinkName(trunk.eniId)} name ${sub} type vlan id ${vlanId}`]);
    } catch (err) {
      if (err instanceof CommandFailed && /Unknown device type|Operation not supported/.test(err.stderr)) {
        throw new Error(
          `trunk mode 'vlan' needs 802.1q VLAN devices, which this kernel cannot create (${err.message}); ` +
            "use trunk mode 'macvlan'",
        );
      }
      throw err;
    }
    try {
      await ip(vpcNetns, [`addr replace ${trunk.gateway}/32 dev ${sub}`]);
      await sysctl(vpcNetns, {
        [`net.ipv4.conf.${sub}.proxy_arp`]: '1',
        [`net.ipv4.neigh.${sub}.proxy_delay`]: '0',
      });
      await ip(vpcNetns, [
        `link set ${sub} up`,
        `route replace ${branch.primaryIp}/32 dev ${sub}`,
        `neigh replace ${branch.primaryIp} lladdr ${branch.mac} dev ${sub} nud permanent`,
      ]);
    } catch (err) {
      await runRemovals(ip, vpcNetns, [`link del ${sub}`]).catch(() => undefined);
      throw err;
    }
  }

  async #macvlanAssociated(trunk: FabricEni, branch: FabricEni): Promise<void> {
    const { vpcNetns, ip } = this.#deps;
    const trunkLink = vpcLinkName(trunk.eniId);
    const chain = ingressChain(trunkLink);
    const counter = branchCounterName(branch.eniId);
    // `add` is idempotent for tables, maps, chains and counters; the chain's one rule is rewritten.
    await this.#nft(
      [
        `add table netdev ${NFT_TABLE}`,
        `add map netdev ${NFT_TABLE} ${NFT_MAP} { type ether_addr : counter; }`,
        `add chain netdev ${NFT_TABLE} ${chain} { type filter hook ingress device "${trunkLink}" priority 0; }`,
        `flush chain netdev ${NFT_TABLE} ${chain}`,
        `add rule netdev ${NFT_TABLE} ${chain} counter name ether saddr map @${NFT_MAP}`,
        `add counter netdev ${NFT_TABLE} ${counter}`,
        `add element netdev ${NFT_TABLE} ${NFT_MAP} { ${branch.mac} : "${counter}" }`,
      ].join('\n'),
    );
    this.#chains.add(trunkLink);
    try {
      await ip(vpcNetns, [
        `route replace ${branch.primaryIp}/32 dev ${trunkLink}`,
        `neigh replace ${branch.primaryIp} lladdr ${branch.mac} dev ${trunkLink} nud permanent`,
      ]);
    } catch (err) {
      await this.disassociated(trunk, 0, branch).catch(() => undefined);
      throw err;
    }
  }

  async #nft(script: string): Promise<void> {
    await this.#deps.run(['ip', 'netns', 'exec', this.#deps.vpcNetns, 'nft', '-f', '-'], {
      stdin: `${script}\n`,
    });
  }

  async #nftRemoval(script: string): Promise<void> {
    try {
      await this.#nft(script);
    } catch (err) {
      if (!nftOnlyAlreadyGone(err)) throw err;
    }
  }
}
