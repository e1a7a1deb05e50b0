// What a container runtime, a supervisor, a clock and a misbehaving EC2 do to a node, as values
// fast-check generates and shrinks: the steps of the churn property (agent-churn.property.test.ts).
import fc from 'fast-check';
import { CloudError } from '../../cloud/cloud.ts';
import { CLOUD_METHODS, type FakeCloudMethod } from '../../ipam/testing/fake-cloud.ts';

/** One pod-level operation of the runtime. Pods are numbered; their sandboxes are the runtime's. */
export type PodOp =
  /** ADD of a new sandbox when the pod has none live, else the runtime repeats the live one's ADD. */
  | { readonly op: 'add'; readonly pod: number }
  /** DEL of the pod's sandbox; `netns: 'gone'`: the runtime removed the namespace first (CNI_NETNS empty). */
  | { readonly op: 'del'; readonly pod: number; readonly netns: 'kept' | 'gone' }
  /** DEL again of the pod's last deleted sandbox. */
  | { readonly op: 'dupDel'; readonly pod: number }
  /** A new sandbox replaces the live one; the stale DEL arrives before, after or with the new ADD. */
  | { readonly op: 'replace'; readonly pod: number; readonly staleDel: 'before' | 'after' | 'concurrent' }
  | { readonly op: 'check'; readonly pod: number }
  /** CNI GC listing every sandbox the runtime knows. */
  | { readonly op: 'gc' };

export type CloudFaultKind = 'throttle' | 'serverError' | 'refused';

/** A DEL the agent never answered: the plugin spools it (and reports success), or the runtime retries it. */
export type LostDel = 'spool' | 'retry';

export type ChurnStep =
  | PodOp
  /** Several operations in flight at once, and maybe the agent killed at a scheduler-chosen point. */
  | {
      readonly op: 'burst';
      readonly ops: readonly PodOp[];
      readonly crash: boolean;
      readonly lostDel: LostDel;
    }
  /** kill -9 between requests (background pool work may be in flight), then a new agent. */
  | { readonly op: 'crash' }
  /** A clean restart (SIGTERM, then a new agent). */
  | { readonly op: 'restart' }
  | {
      readonly op: 'fault';
      readonly method: FakeCloudMethod;
      readonly kind: CloudFaultKind;
      readonly times: number;
    }
  | { readonly op: 'advance'; readonly ms: number }
  /** Time for the pool manager's background passes to run. */
  | { readonly op: 'pool' };

/** The cloud calls an agent makes, each of which may fail. */

/** The error EC2 answers with for each kind of fault. */
export function cloudFault(method: FakeCloudMethod, kind: CloudFaultKind): CloudError {
  switch (kind) {
    case 'throttle':
      return new CloudError(`${method}: Request limit exceeded.`, 'RequestLimitExceeded', true);
    case 'serverError':
      return new CloudError(`${method}: An internal error has occurred (500)`, 'InternalError', true);
    case 'refused':
      return new CloudError(
        `${method}: You are not authorized to perform this operation.`,
        'UnauthorizedOperation',
        false,
      );
  }
}

export interface ChurnShape {
  readonly pods: number;
  readonly maxSteps: number;
  /** Cloud methods whose faults are left out (see the test's flags). */
  readonly sparedMethods?: readonly FakeCloudMethod[];
}

export function podOpArb(pods: number): fc.Arbitrary<PodOp> {
  const pod = fc.nat(pods - 1);
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('add' as const), pod }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('del' as const),
        pod,
        netns: fc.constantFrom('kept' as const, 'gone' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('dupDel' as const), pod }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('replace' as const),
        pod,
        staleDel: fc.constantFrom('before' as const, 'after' as const, 'concurrent' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('check' as const), pod }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('gc' as const) }) },
  );
}

export function churnStepsArb(shape: ChurnShape): fc.Arbitrary<ChurnStep[]> {
  const step: fc.Arbitrary<ChurnStep> = fc.oneof(
    { weight: 6, arbitrary: podOpArb(shape.pods) },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('burst' as const),
        ops: fc.array(podOpArb(shape.pods), { minLength: 2, maxLength: 5 }),
        crash: fc.boolean(),
        lostDel: fc.constantFrom('spool' as const, 'retry' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('crash' as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('fault' as const),
        method: fc.constantFrom(...CLOUD_METHODS.filter((m) => !shape.sparedMethods?.includes(m))),
        kind: fc.constantFrom('throttle' as const, 'serverError' as const, 'refused' as const),
        times: fc.integer({ min: 1, max: 3 }),
      }),
    },
    // Up to twice the 30 s cooldown: freed addresses become reusable between some steps.
    { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(60_000) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('pool' as const) }) },
  );
  return fc.array(step, { minLength: 1, maxLength: shape.maxSteps });
}
