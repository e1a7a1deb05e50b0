// Which subnets a node asks the cluster's census for: its primary ENI's, those of its ENIs, and
// every subnet its placement offers for a new ENI, so the census is there before it is needed.
import type { InstanceMetadata } from '../../cloud/cloud.ts';
import type { EniPlacement, EniPlacer, PlacementOptions } from '../enis/eni-placement.ts';
import type { SubnetCensusSource } from './census-source.ts';

/** `placer`, telling `census` of every subnet it offers (the choice and its fallbacks). */
export function placerWantingCensus(placer: EniPlacer, census: SubnetCensusSource | undefined): EniPlacer {
  if (census === undefined) return placer;
  return {
    ...placer,
    async next(options?: PlacementOptions): Promise<EniPlacement> {
      const placement = await placer.next(options);
      for (const p of [placement, ...(placement.fallbacks ?? [])]) census.want(p.subnetId, p.subnetCidr);
      return placement;
    },
  };
}

/** The primary ENI's subnet and those of `enis`, asked for. */
export function wantSubnetsOf(
  census: SubnetCensusSource | undefined,
  metadata: InstanceMetadata,
  enis: readonly { readonly subnetId: string; readonly subnetCidr: string }[],
): void {
  if (census === undefined) return;
  census.want(metadata.subnetId, metadata.subnetCidr);
  for (const e of enis) census.want(e.subnetId, e.subnetCidr);
}
