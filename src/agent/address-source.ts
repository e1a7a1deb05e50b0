// What the agent's CNI operations need from IPAM. Kept narrow so the operations can be unit-tested
// with the real pool and a fake cloud, and so ADD visibly never waits on the cloud while the pool
// has a free address.

export interface PooledAddress {
  readonly ip: string;
  readonly eniId: string;
  /** Route table of the address's ENI (254 = main, for the primary ENI). */
  readonly routeTable: number;
}

export interface AddressSource {
  /** In-memory: an address that is neither assigned nor cooling, or undefined if none. */
  allocate(owner: string): PooledAddress | undefined;
  /** Waits until the pool may have a free address; rejects with the reason after timeoutMs. */
  waitForAddress(timeoutMs: number): Promise<void>;
  /**
   * The address was used by a pod: it cools down before reuse. IPAM writes the cooldown record
   * (one owner); the caller awaits the ledger's commit before it reports success.
   */
  release(ip: string, eniId?: string): void;
  /** The address never reached a pod (failed ADD): free again at once. */
  unreserve(ip: string): void;
  /** Whether `ip` is one of the node's pool addresses (free, lent or cooling, on any of its ENIs). */
  holds?(ip: string): boolean;
  /** Set when EC2 no longer lists the ENI as attached to this node (since: ms since epoch). */
  lostEni?(eniId: string): { readonly since: number } | undefined;
}
