// What the instance's OS sees when EC2 attaches or detaches an ENI, for a fleet node whose kernel
// is the fake one: a device with the ENI's MAC appears once AttachNetworkInterface succeeds and
// goes once DetachNetworkInterface does, as the emulator's fabric does with real links in the lab.
import { type Cloud, CloudError, type CreatedEni } from '../../src/cloud/cloud.ts';
import type { FakeKernel } from '../../src/dataplane/testing/fake-kernel.ts';

/** `inner`, with the node's ENI devices following its attaches and detaches. */
export function withFakeFabric(inner: Cloud, kernel: FakeKernel): Cloud {
  const macOf = new Map<string, string>(); // ENI → MAC (from its creation)
  const linkOf = new Map<string, string>(); // attachment → link name
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const method = value as (...a: unknown[]) => Promise<unknown>;
      switch (prop) {
        case 'createEni':
          return async (...args: unknown[]) => {
            const created = (await method.apply(target, args)) as CreatedEni;
            macOf.set(created.eniId, created.mac);
            return created;
          };
        case 'attachEni':
          return async (...args: unknown[]) => {
            const [eniId, , deviceIndex] = args as [string, string, number];
            const attachmentId = (await method.apply(target, args)) as string;
            const mac = macOf.get(eniId);
            const name = `ens${deviceIndex + 5}`;
            if (mac !== undefined && kernel.link(name) === undefined) kernel.addLink(name, mac, { up: true });
            linkOf.set(attachmentId, name);
            return attachmentId;
          };
        case 'detachEni':
          return async (...args: unknown[]) => {
            const [attachmentId] = args as [string];
            const name = linkOf.get(attachmentId);
            const gone = () => {
              if (name !== undefined && kernel.link(name) !== undefined) kernel.deleteLink(name);
            };
            try {
              await method.apply(target, args);
            } catch (err) {
              // Already detached (a retry of a detach EC2 did): the device is gone all the same.
              if (err instanceof CloudError && err.code === 'InvalidAttachmentID.NotFound') gone();
              throw err;
            }
            gone();
            return undefined;
          };
        default:
          return method.bind(target);
      }
    },
  });
}
