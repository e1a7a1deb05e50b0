// Subnet CIDR reservations (CreateSubnetCidrReservation, GetSubnetCidrReservations), as EC2 keeps
// them: ranges of a subnet EC2 never picks a /32 from on its own (a secondary IP by count, a new
// ENI's primary IP). A `prefix` reservation is where prefix delegation takes /28s from first;
// nothing else lands there. An `explicit` one holds addresses its owner assigns by name
// (PrivateIpAddress.N, Ipv4Prefix.N); EC2 delegates no prefix out of it on its own either.
import {
  cidrContains,
  cidrsOverlap,
  cidrWithin,
  formatCidr,
  type Ipv4Cidr,
  isCidr,
  parseCidr,
} from '../../infra/ipv4.ts';
import { invalidParameter } from '../ec2/error.ts';

export type ReservationType = 'prefix' | 'explicit';

export interface CidrReservation {
  readonly reservationId: string;
  readonly subnetId: string;
  /** As EC2 answers it: the block's first address and its length. */
  readonly cidr: string;
  readonly block: Ipv4Cidr;
  readonly type: ReservationType;
  readonly description: string;
}

export class SubnetReservations {
  readonly #subnetId: string;
  readonly #subnet: Ipv4Cidr;
  readonly #list: CidrReservation[] = [];

  constructor(subnetId: string, subnet: Ipv4Cidr) {
    this.#subnetId = subnetId;
    this.#subnet = subnet;
  }

  list(): readonly CidrReservation[] {
    return this.#list;
  }

  /** The checks CreateSubnetCidrReservation makes: inside the subnet, no overlap, a type EC2 knows. */
  add(reservationId: string, cidrText: string, type: string, description = ''): CidrReservation {
    if (type !== 'prefix' && type !== 'explicit') {
      throw invalidParameter(`Invalid value '${type}' for ReservationType; expected prefix or explicit`);
    }
    if (!isCidr(cidrText)) throw invalidParameter(`Invalid CIDR block ${cidrText}`);
    const block = parseCidr(cidrText);
    if (!cidrWithin(block, this.#subnet)) {
      throw invalidParameter(`The CIDR ${cidrText} is not within the subnet ${this.#subnetId}`);
    }
    // Prefix delegation hands out whole /28s: a smaller prefix reservation could never serve.
    if (type === 'prefix' && block.prefixLength > 28) {
      throw invalidParameter(`A prefix reservation must be a /28 or larger, got ${cidrText}`);
    }
    const clash = this.#list.find((r) => cidrsOverlap(r.block, block));
    if (clash !== undefined) {
      throw invalidParameter(
        `The CIDR ${cidrText} overlaps the reservation ${clash.reservationId} (${clash.cidr})`,
      );
    }
    const reservation: CidrReservation = {
      reservationId,
      subnetId: this.#subnetId,
      cidr: formatCidr(block),
      block,
      type,
      description,
    };
    this.#list.push(reservation);
    return reservation;
  }

  remove(reservationId: string): CidrReservation | undefined {
    const i = this.#list.findIndex((r) => r.reservationId === reservationId);
    if (i < 0) return undefined;
    return this.#list.splice(i, 1)[0];
  }

  /** The reservation holding `address`, if any. */
  of(address: number): CidrReservation | undefined {
    return this.#list.find((r) => cidrContains(r.block, address));
  }
}
