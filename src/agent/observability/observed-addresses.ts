// The pool as ADD sees it (AddressSource), with the waits for the pool to grow timed: an ADD that
// found no free address waits for the pool manager, which waits for EC2. Allocation itself is
// passed through untouched (the ADD path stays as cheap as it was); only finding none is counted.
import type { AddressSource } from '../address-source.ts';

export interface AddressObserver {
  /** An allocation found no free address. */
  readonly noneFree: () => void;
  /** A wait for the pool to grow ended: woken (an address came) or not (the deadline passed). */
  readonly waited: (ms: number, woken: boolean) => void;
  /** After every allocation, whatever came of it (readiness looks whether the pool is empty now). */
  readonly allocated?: () => void;
}

export function observedAddresses(inner: AddressSource, observe: AddressObserver): AddressSource {
  const { lostEni, holds } = inner;
  return {
    allocate(owner) {
      const got = inner.allocate(owner);
      if (got === undefined) observe.noneFree();
      observe.allocated?.();
      return got;
    },
    release: (ip, eniId) => inner.release(ip, eniId),
    unreserve: (ip) => inner.unreserve(ip),
    async waitForAddress(timeoutMs) {
      const started = performance.now();
      try {
        await inner.waitForAddress(timeoutMs);
        observe.waited(performance.now() - started, true);
      } catch (err) {
        observe.waited(performance.now() - started, false);
        throw err;
      }
    },
    ...(lostEni === undefined ? {} : { lostEni: (eniId: string) => lostEni.call(inner, eniId) }),
    ...(holds === undefined ? {} : { holds: (ip: string) => holds.call(inner, ip) }),
  };
}
