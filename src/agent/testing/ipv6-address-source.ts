// An IPv6 AddressSource for unit tests of the agent's operations: addresses of the primary ENI's
// /80 as the contract says the real one (v6cloud's) gives them (canonical text, main table), each
// handed out once, with releases and unreserves recorded.
import type { AddressSource, PooledAddress } from '../address-source.ts';

export const PRIMARY_ENI = 'eni-primary';

export interface Ipv6SourceDouble extends AddressSource {
  readonly released: string[];
  readonly unreserved: string[];
}

export function ipv6Source(ips: readonly string[]): Ipv6SourceDouble {
  const free: PooledAddress[] = ips.map((ip) => ({ ip, eniId: PRIMARY_ENI, routeTable: 254 }));
  const released: string[] = [];
  const unreserved: string[] = [];
  return {
    released,
    unreserved,
    allocate: () => free.shift(),
    waitForAddress: async () => {
      throw new Error('the /80 has no free address');
    },
    release: (ip) => void released.push(ip),
    unreserve: (ip) => void unreserved.push(ip),
  };
}
