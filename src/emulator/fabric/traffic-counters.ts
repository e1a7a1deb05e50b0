// "Which ENI carried a packet": per ENI, the frames the VPC received from it (node → VPC).
// A regular ENI's count is its VPC-side link's rx counter. A branch's is its VLAN sub-interface's
// rx counter ('vlan' mode) or its nft counter by source MAC ('macvlan' mode). A trunk's link also
// receives its branches' frames, so a trunk's own count leaves those out, including the frames
// of branches already removed, so that it never goes backwards.

import type { ProcessRunner } from '../../infra/process.ts';
import type { BranchOnTrunk, FabricEni } from '../api.ts';
import { vpcLinkName } from './link-names.ts';
import { branchCounterName, branchLinkName, NFT_TABLE, type TrunkDriver } from './trunk-branches.ts';

export interface TrafficDeps {
  readonly vpcNetns: string;
  readonly mode: TrunkDriver;
  readonly run: ProcessRunner;
}

interface LinkStats {
  readonly ifname?: unknown;
  readonly stats64?: { readonly rx?: { readonly packets?: unknown } };
}

interface NftCounters {
  readonly nftables?: readonly {
    readonly counter?: { readonly name?: unknown; readonly packets?: unknown };
  }[];
}

export class TrafficCounters {
  readonly #deps: TrafficDeps;
  /** Per trunk ENI: frames of its branches that are gone (still not the trunk's own). */
  readonly #retired = new Map<string, number>();

  constructor(deps: TrafficDeps) {
    this.#deps = deps;
  }

  async read(enis: readonly FabricEni[], branches: readonly BranchOnTrunk[]): Promise<Map<string, number>> {
    const links = await this.#linkRx();
    const counters =
      this.#deps.mode === 'macvlan' && branches.length > 0 ? await this.#nftCounters() : new Map();
    const out = new Map<string, number>();
    const ofBranches = new Map<string, number>();
    for (const { trunk, branch } of branches) {
      const n = this.#branchCount(branch, links, counters);
      out.set(branch.eniId, n);
      ofBranches.set(trunk.eniId, (ofBranches.get(trunk.eniId) ?? 0) + n);
    }
    for (const eni of enis) {
      const rx = links.get(vpcLinkName(eni.eniId)) ?? 0;
      const notOwn = (ofBranches.get(eni.eniId) ?? 0) + (this.#retired.get(eni.eniId) ?? 0);
      out.set(eni.eniId, Math.max(0, rx - notOwn));
    }
    return out;
  }

  /** Before a branch is removed: its frames stay counted against its trunk. */
  async retire(trunk: FabricEni, branch: FabricEni): Promise<void> {
    const links = await this.#linkRx().catch(() => new Map<string, number>());
    const counters =
      this.#deps.mode === 'macvlan'
        ? await this.#nftCounters().catch(() => new Map<string, number>())
        : new Map();
    const n = this.#branchCount(branch, links, counters);
    this.#retired.set(trunk.eniId, (this.#retired.get(trunk.eniId) ?? 0) + n);
  }

  /** The ENI's link is gone: its counters start from zero if it comes back. */
  forget(eniId: string): void {
    this.#retired.delete(eniId);
  }

  #branchCount(branch: FabricEni, links: Map<string, number>, counters: Map<string, number>): number {
    return this.#deps.mode === 'vlan'
      ? (links.get(branchLinkName(branch.eniId)) ?? 0)
      : (counters.get(branchCounterName(branch.eniId)) ?? 0);
  }

  async #linkRx(): Promise<Map<string, number>> {
    const { stdout } = await this.#deps.run(['ip', '-n', this.#deps.vpcNetns, '-s', '-j', 'link', 'show']);
    const out = new Map<string, number>();
    for (const link of JSON.parse(stdout) as LinkStats[]) {
      const packets = link.stats64?.rx?.packets;
      if (typeof link.ifname === 'string' && typeof packets === 'number') out.set(link.ifname, packets);
    }
    return out;
  }

  async #nftCounters(): Promise<Map<string, number>> {
    const { stdout } = await this.#deps.run([
      'ip',
      'netns',
      'exec',
      this.#deps.vpcNetns,
      'nft',
      '-j',
      'list',
      'counters',
      'table',
      'netdev',
      NFT_TABLE,
    ]);
    const out = new Map<string, number>();
    for (const item of (JSON.parse(stdout) as NftCounters).nftables ?? []) {
      const c = item.counter;
      if (typeof c?.name === 'string' && typeof c.packets === 'number') out.set(c.name, c.packets);
    }
    return out;
  }
}
