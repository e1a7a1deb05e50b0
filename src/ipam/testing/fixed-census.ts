// Test support: a subnet census source that answers with the censuses a test gives it, and
// records which subnets the pool asked for.
import type { SubnetCensusSource } from '../census/census-source.ts';
import { CensusView, type SubnetCensus } from '../census/subnet-census.ts';

export class FixedCensus implements SubnetCensusSource {
  readonly wanted = new Map<string, string>();
  readonly #views = new Map<string, CensusView>();
  places: boolean;

  constructor(places = true) {
    this.places = places;
  }

  set(census: SubnetCensus): void {
    this.#views.set(census.subnetId, new CensusView(census));
  }

  view(subnetId: string): CensusView | undefined {
    return this.#views.get(subnetId);
  }

  want(subnetId: string, cidr: string): void {
    this.wanted.set(subnetId, cidr);
  }
}
