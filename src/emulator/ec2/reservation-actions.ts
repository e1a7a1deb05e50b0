// GetSubnetCidrReservations, as EC2 answers it: the subnet's reservations (SubnetId required; an
// unknown subnet is InvalidSubnetID.NotFound), filtered and paged, the IPv4 ones in
// subnetIpv4CidrReservationSet and the IPv6 ones (none here) in subnetIpv6CidrReservationSet.
import type { CidrReservation } from '../vpc/subnet-reservations.ts';
import type { VpcView } from '../vpc/view.ts';
import { applyFilters } from './filters.ts';
import { paginate } from './pagination.ts';
import type { QueryParams } from './params.ts';
import { OWNER_ID } from './render.ts';
import type { XmlObject } from './xml.ts';

const noTags = new Map<string, string>();

export function getSubnetCidrReservations(p: QueryParams, state: VpcView): XmlObject {
  const pool = state.subnet(p.require('SubnetId'));
  const filtered = applyFilters(
    pool.reservations.list(),
    p.filters(),
    { reservationType: (r) => [r.type], 'subnet-id': (r) => [r.subnetId] },
    () => noTags,
  );
  const page = paginate(filtered, p);
  return {
    subnetIpv4CidrReservationSet: page.items.map(render),
    subnetIpv6CidrReservationSet: [],
    nextToken: page.nextToken,
  };
}

function render(r: CidrReservation): XmlObject {
  return {
    subnetCidrReservationId: r.reservationId,
    subnetId: r.subnetId,
    cidr: r.cidr,
    reservationType: r.type,
    ownerId: OWNER_ID,
    description: r.description,
    tagSet: [],
  };
}
