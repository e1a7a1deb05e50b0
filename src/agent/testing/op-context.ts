// An OperationContext for unit tests of the agent's CNI operations: the real ledger (in memory),
// the real dataplane on the fake kernel, and a small address source.
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../infra/log.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import type { PodIdentity } from '../../plan/attachment.ts';
import { noPodSource } from '../../pods/watch/pod-source.ts';
import type { AddressSource, PooledAddress } from '../address-source.ts';
import type { AttachRequest, OperationContext } from '../context.ts';
import { AgentCounters } from '../stats.ts';

export type TestContext = OperationContext & { kernel: FakeKernel };

/** Hands out these addresses in order, each once; records releases. */
export function listPool(ips: readonly string[], released: string[] = []): AddressSource {
  const free: PooledAddress[] = ips.map((ip) => ({ ip, eniId: 'eni-1', routeTable: 2 }));
  return {
    allocate: () => free.shift(),
    waitForAddress: async () => {
      throw new Error('pool at its limits');
    },
    release: (ip) => void released.push(ip),
    unreserve() {},
  };
}

export async function opContext(
  addresses: AddressSource,
  over: Partial<OperationContext> = {},
): Promise<TestContext> {
  const kernel = new FakeKernel();
  const dataplane = new Dataplane(kernel);
  await dataplane.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  return {
    kernel,
    ledger: await Ledger.open(new MemoryLedgerStore(), { now: Date.now }),
    addresses,
    dataplane,
    pods: noPodSource,
    node: { vpcCidrs: ['10.0.0.0/16'], primaryIp: '10.0.0.10' },
    log: silentLogger,
    now: Date.now,
    vethPrefix: 'vpc',
    defaultMtu: 9001,
    addWaitMs: 5000,
    externalSnat: false,
    // Any path is a namespace that exists (the tests' netns paths are plain files).
    inspectNetns: async () => ({ exists: true, notNetns: undefined, identity: undefined }),
    enablePodEni: false,
    trunk: () => undefined,
    trunkDriver: 'macvlan',
    enforcingMode: 'strict',
    counters: new AgentCounters(),
    netnsIdentity: async () => undefined,
    ...over,
  };
}

export function attachRequest(
  containerId: string,
  netns: string | undefined,
  pod: PodIdentity = { namespace: 'default', name: 'web-0', uid: 'uid-1' },
  prevResultIps: readonly string[] = [],
): AttachRequest {
  return {
    key: { network: 'vpcnet', containerId, ifName: 'eth0' },
    netns,
    pod,
    mtu: undefined,
    vethPrefix: undefined,
    prevResultIps,
  };
}
