import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CniError } from '../../cni/errors.ts';
import { Dataplane } from '../../dataplane/dataplane.ts';
import type { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { FileLedgerStore } from '../../ledger/storage/store.ts';
import { attachment, clock, JOURNAL, NEVER_COMPACT, PATH } from '../../ledger/testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../../ledger/testing/memory-fs.ts';
import type { Resource } from '../../plan/resource.ts';
import type { PodSource } from '../../pods/watch/pod-source.ts';
import type { AddressSource, PooledAddress } from '../address-source.ts';
import type { AttachRequest } from '../context.ts';
import { opContext, type TestContext } from '../testing/op-context.ts';
import { addAttachment } from './add.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A pool that is empty until `grants` addresses arrive, each taken by whoever allocates first. */
function racingPool(arrivals: PooledAddress[], waits: { count: number }): AddressSource {
  const free: PooledAddress[] = [];
  return {
    allocate: () => free.shift(),
    async waitForAddress() {
      waits.count++;
      const next = arrivals.shift();
      if (!next) throw new Error('pool at its limits');
      // Another pod wins the first address that arrives; ours comes with the next one.
      if (waits.count === 1) return;
      free.push(next);
    },
    release() {},
    unreserve() {},
  };
}

function context(addresses: AddressSource, addWaitMs = 5000): Promise<TestContext> {
  return opContext(addresses, { addWaitMs });
}

async function request(): Promise<AttachRequest> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-add-'));
  dirs.push(dir);
  await writeFile(join(dir, 'ns'), '');
  return {
    key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' },
    netns: join(dir, 'ns'),
    pod: { namespace: 'default', name: 'web-0' },
    mtu: undefined,
    vethPrefix: undefined,
    prevResultIps: [],
  };
}

test('an ADD that loses the race for a new address waits again instead of failing', async () => {
  const waits = { count: 0 };
  const arrivals = [
    { ip: '10.0.0.20', eniId: 'eni-1', routeTable: 254 },
    { ip: '10.0.0.21', eniId: 'eni-1', routeTable: 254 },
  ];
  const ctx = await context(racingPool(arrivals, waits));
  const result = await addAttachment(ctx, await request());
  assert.equal(result.ips?.[0]?.address, '10.0.0.21/32');
  assert.equal(waits.count, 2);
});

test('an ADD with no address in time fails with code 11 and the pool’s reason', async () => {
  const ctx = await context(racingPool([], { count: 0 }));
  await assert.rejects(
    addAttachment(ctx, await request()),
    (e: unknown) => e instanceof CniError && e.code === 11 && /pool at its limits/.test(e.details ?? ''),
  );
  assert.equal(ctx.ledger.list().length, 0);
});

/** A dataplane whose create builds the pod, then fails without undoing anything (an incomplete rollback). */
class LeakyDataplane extends Dataplane {
  constructor(
    kernel: FakeKernel,
    private readonly removeFails: boolean,
  ) {
    super(kernel);
  }

  override async create(netns: string, resources: readonly Resource[]): Promise<void> {
    await super.create(netns, resources);
    throw new Error('rule add failed (rollback incomplete: link del refused)');
  }

  override async remove(resources: readonly Resource[]): Promise<void> {
    if (this.removeFails) throw new Error('kernel refused');
    return super.remove(resources);
  }
}

function onePool(): AddressSource {
  let free: PooledAddress | undefined = { ip: '10.0.0.30', eniId: 'eni-1', routeTable: 254 };
  return {
    allocate: () => {
      const a = free;
      free = undefined;
      return a;
    },
    waitForAddress: async () => {
      throw new Error('empty');
    },
    release() {},
    unreserve() {},
  };
}

test('a failed ADD removes what an incomplete rollback left before it forgets the attachment', async () => {
  const ctx = await context(onePool());
  const leaky = { ...ctx, dataplane: new LeakyDataplane(ctx.kernel, false) };
  await assert.rejects(addAttachment(leaky, await request()), /rollback incomplete/);
  assert.deepEqual(ctx.kernel.podResidue(), []);
  assert.equal(ctx.ledger.list().length, 0);
});

test('when even that cleanup fails, the adding record stays so DEL or recovery can remove the rest', async () => {
  const ctx = await context(onePool());
  const leaky = { ...ctx, dataplane: new LeakyDataplane(ctx.kernel, true) };
  await assert.rejects(addAttachment(leaky, await request()), /rollback incomplete/);
  const left = ctx.ledger.list();
  assert.equal(left.length, 1);
  assert.equal(left[0]!.phase, 'adding');
  assert.ok(left[0]!.resources.some((r) => r.kind === 'veth'));
});

test('with ENABLE_POD_ENI, a pod with a malformed branch ENI annotation is refused with the field named, not given the node’s security groups', async () => {
  const base = await context(onePool());
  const pods: PodSource = {
    lookup: async (namespace, name) => ({
      namespace,
      name,
      uid: 'u1',
      nodeName: 'node1',
      annotations: name === 'web-0' ? { 'vpc.amazonaws.com/pod-eni': '[{"eniId":"eni-b1"}]' } : {},
      requestsPodEni: true,
    }),
  };
  const ctx = { ...base, pods, enablePodEni: true };
  await assert.rejects(
    addAttachment(ctx, await request()),
    (e: unknown) => e instanceof CniError && e.code === 120 && /web-0/.test(e.msg) && /eniId/.test(e.msg),
  );
  assert.equal(ctx.ledger.list().length, 0);
  assert.deepEqual(ctx.kernel.podResidue(), []);
  // Without the flag the annotation is not looked at, as upstream does.
  const plain = { ...(await context(onePool())), pods, enablePodEni: false };
  assert.equal((await addAttachment(plain, await request())).ips?.[0]?.address, '10.0.0.30/32');
});

/** A dataplane that notes what the ledger's file system had seen when the kernel work began. */
class WatchedDataplane extends Dataplane {
  callsAtCreate: string[] | undefined;
  constructor(
    kernel: FakeKernel,
    private readonly fs: MemoryLedgerFs,
  ) {
    super(kernel);
  }

  override async create(netns: string, resources: readonly Resource[]): Promise<void> {
    this.callsAtCreate = [...this.fs.calls];
    return super.create(netns, resources);
  }
}

test('the adding record is written, not synced, before the kernel; the answer waits for an fdatasync after the final record', async () => {
  const fs = new MemoryLedgerFs();
  const opened = () => Ledger.open(new FileLedgerStore(PATH, fs, undefined, NEVER_COMPACT), clock);
  const ledger = await opened();
  // Two writes first: a compaction, then one that opens the journal.
  ledger.put(attachment(9));
  await ledger.commit();
  ledger.put({ ...attachment(9), createdAt: 1 });
  await ledger.commit();
  const ctx = await context(onePool());
  const dataplane = new WatchedDataplane(ctx.kernel, fs);
  fs.calls.length = 0;
  await addAttachment({ ...ctx, ledger, dataplane }, await request());
  assert.deepEqual(dataplane.callsAtCreate, [`append ${JOURNAL}`]);
  assert.deepEqual(fs.calls, [`append ${JOURNAL}`, `append ${JOURNAL}`, `datasync ${JOURNAL}`]);
  // A power cut after the answer: the attachment is there, done.
  fs.crash();
  const after = (await opened()).get({ network: 'vpcnet', containerId: 'c1', ifName: 'eth0' });
  assert.ok(after !== undefined && after.phase === undefined, 'the answered ADD is on disk, done');
});
