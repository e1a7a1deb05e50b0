// A fake kernel whose runs wait while held: a test keeps an operation in flight inside the agent
// for as long as it needs (graceful stop), then lets it go.
import type { Kernel } from '../../dataplane/kernel.ts';
import type { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { kernelWithRun } from '../../dataplane/testing/wrapped-kernel.ts';

export interface HeldKernel {
  readonly kernel: Kernel;
  /** Runs from now on wait until release(). */
  hold(): void;
  release(): void;
  /** Runs waiting right now. */
  waiting(): number;
}

export function heldKernel(inner: FakeKernel): HeldKernel {
  let held = false;
  let waiters: (() => void)[] = [];
  return {
    kernel: kernelWithRun(inner, async (ns, ops, mode) => {
      if (held) await new Promise<void>((r) => waiters.push(r));
      return inner.run(ns, ops, mode);
    }),
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const w of waiters) w();
      waiters = [];
    },
    waiting: () => waiters.length,
  };
}
