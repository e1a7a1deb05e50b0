// What the pool asks of the cluster's subnet census (the agent's census loop answers): the newest
// census of a subnet fresh enough to act on, and a way to say which subnets this node needs
// censused. Without a source (no Kubernetes API, VPCNET_SUBNET_CENSUS=off) the pool places and
// assigns as upstream does: by EC2's free address count, /32s picked by EC2.
import type { CensusView } from './subnet-census.ts';

export interface SubnetCensusSource {
  /** The census of `subnetId`, when one is fresh enough; undefined: act without one. */
  view(subnetId: string): CensusView | undefined;
  /** This node needs `subnetId` (of `cidr`) censused: its ENIs are there, or new ones may go there. */
  want(subnetId: string, cidr: string): void;
  /** Whether placement and /32 assignment may use the census (not only report it). */
  readonly places: boolean;
}
