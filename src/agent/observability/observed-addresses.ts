// The pool as ADD sees it (AddressSource), with the waits for the pool to grow timed: an ADD that
// found no free address waits for the pool manager, which waits for EC2. Allocation itself is
// passed through untouched (the ADD path stays as cheap as it was).
import type { AddressSource } from '../address-source.ts';

export function observedAddresses(
  inner: AddressSource,
  observe: (ms: number, woken: boolean) => void,
): AddressSource {
  const { lostEni, holds } = inner;
  return {
    allocate: (owner) => inner.allocate(owner),
    release: (ip, eniId) => inner.release(ip, eniId),
    unreserve: (ip) => inner.unreserve(ip),
    async waitForAddress(timeoutMs) {
      const started = performance.now();
      try {
        await inner.waitForAddress(timeoutMs);
        observe(performance.now() - started, true);
      } catch (err) {
        observe(performance.now() - started, false);
        throw err;
      }
    },
    ...(lostEni === undefined ? {} : { lostEni: (eniId: string) => lostEni.call(inner, eniId) }),
    ...(holds === undefined ? {} : { holds: (ip: string) => holds.call(inner, ip) }),
  };
}
