// EC2's view of trunks for unit tests: what the resource controller associated (branch ENI, trunk,
// VLAN ID, MAC, address, subnet), as the agent's trunk-facts cache would answer it; a test edits it
// as the controller (or an attacker who cannot touch EC2) would.
import type { TrunkBranch, TrunkFactsSource } from '../trunk-facts.ts';

export class FakeTrunkFacts implements TrunkFactsSource {
  readonly #branches = new Map<string, TrunkBranch>();
  /** Every question asked, with `fresh` when a fresh read was demanded. */
  readonly asked: { eniId: string; fresh: boolean }[] = [];

  associate(branch: TrunkBranch): void {
    this.#branches.set(branch.eniId, branch);
  }

  disassociate(eniId: string): void {
    this.#branches.delete(eniId);
  }

  async branch(
    trunkEniId: string,
    eniId: string,
    opts: { fresh?: boolean } = {},
  ): Promise<TrunkBranch | undefined> {
    this.asked.push({ eniId, fresh: opts.fresh === true });
    const b = this.#branches.get(eniId);
    return b?.trunkEniId === trunkEniId ? b : undefined;
  }
}
