// Taking a census of one subnet from EC2: its CIDR reservations (GetSubnetCidrReservations) and
// what every ENI in it holds (one DescribeNetworkInterfaces by subnet, at EC2's largest page).
// A role without ec2:GetSubnetCidrReservations still gets a census, marked as not knowing the
// reservations, and the warning names the permission to add.
import { type Cloud, CloudError } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolLog } from '../pool/pool-parts.ts';
import { type CensusReservation, censusOf, type SubnetCensus } from './subnet-census.ts';

/** EC2's answers to a call the caller's IAM policy does not allow. */
const UNAUTHORIZED = new Set(['UnauthorizedOperation', 'AccessDenied', 'AccessDeniedException']);

export interface CensusSubject {
  readonly subnetId: string;
  readonly cidr: string;
}

export async function takeCensus(
  cloud: Cloud,
  subject: CensusSubject,
  now: number,
  log: PoolLog,
): Promise<SubnetCensus> {
  const { subnetId, cidr } = subject;
  let reservations: CensusReservation[] | undefined;
  try {
    reservations = (await cloud.subnetCidrReservations(subnetId)).map((r) => ({
      cidr: r.cidr,
      type: r.type,
    }));
  } catch (err) {
    if (!(err instanceof CloudError && UNAUTHORIZED.has(err.code))) throw err;
    log.warn(
      'subnet census: cannot read CIDR reservations; counting without them and naming no address for pods (allow ec2:GetSubnetCidrReservations)',
      { subnet: subnetId, error: cloudErrorText(err) },
    );
  }
  const use = await cloud.describeSubnetAddressUse(subnetId);
  return censusOf({
    subnetId,
    cidr,
    takenAt: now,
    addresses: use.addresses,
    prefixes: use.prefixes,
    reservations,
  });
}
