// Test support: EC2's eventual consistency on the fake cloud. DescribeNetworkInterfaces answers
// with the instance's ENIs as they were `lagMs` ago (never before the wrapper was made); every
// other call goes to the fake cloud as is. The history holds a copy of the truth after every call
// and after each record() (for a test that changes the fake cloud directly, "outside vpcnet").

import type { Cloud, EniInfo } from '../../cloud/cloud.ts';
import type { FakeCloud } from './fake-cloud.ts';

export interface LaggingCloud {
  readonly cloud: Cloud;
  /** Copies the truth into the history now. */
  record(): Promise<void>;
  lagMs: number;
}

export async function laggingDescribes(
  fake: FakeCloud,
  clock: { now(): number },
  lagMs: number,
): Promise<LaggingCloud> {
  const history: { at: number; enis: EniInfo[] }[] = [];
  // The truth read straight from the fake's state: no call recorded, no injected failure.
  const truth = (): EniInfo[] =>
    fake.attached().map((e) => ({
      eniId: e.eniId,
      mac: e.mac,
      deviceNumber: e.attachment?.deviceIndex ?? 0,
      attachmentId: e.attachment?.attachmentId ?? '',
      subnetId: e.subnetId,
      subnetCidr: fake.meta.subnetCidr,
      primaryIp: e.primaryIp,
      secondaryIps: [...e.secondaryIps],
      description: e.description,
      interfaceType: e.interfaceType,
      tags: { ...e.tags },
    }));
  const lagging: LaggingCloud = {
    lagMs,
    async record() {
      history.push({ at: clock.now(), enis: truth() });
    },
    cloud: new Proxy(fake, {
      get(target, prop) {
        if (prop === 'describeInstanceEnis') {
          return async (instanceId: string): Promise<EniInfo[]> => {
            await fake.describeInstanceEnis(instanceId); // recorded, and fails when told to
            await lagging.record();
            const asOf = clock.now() - lagging.lagMs;
            let seen = history[0]?.enis ?? [];
            for (const h of history) if (h.at <= asOf) seen = h.enis;
            return structuredClone(seen);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          try {
            return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } finally {
            await lagging.record();
          }
        };
      },
    }),
  };
  await lagging.record();
  return lagging;
}
