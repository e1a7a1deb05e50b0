// A reconciler over the real dataplane on the fake kernel, with an in-memory ledger, a node with
// one secondary ENI (its own rule is protected), a recording logger and a pod-line serializer that
// says what queued. `attach` makes a pod network in the kernel and (unless told not to) records it.
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { KeyedSerializer } from '../../infra/keyed-serializer.ts';
import type { LogFields, Logger } from '../../infra/log.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import type { Attachment, AttachmentKey } from '../../plan/attachment.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import { Reconciler, type ReconcilerDeps } from '../reconciler.ts';

const ENI_PRIMARY = '10.0.1.10';
export const ENI_RULE_ID = `rule 1536 ${ENI_PRIMARY}/32 - - 2`;

export interface LogLine {
  readonly level: string;
  readonly msg: string;
  readonly fields: LogFields | undefined;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (msg: string, fields?: LogFields) => lines.push({ level, msg, fields });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

interface AttachOptions {
  readonly ip?: string;
  readonly routeTable?: number;
  readonly snat?: boolean;
  readonly phase?: 'adding';
  /** Create the kernel state but record nothing (an orphan). */
  readonly unrecorded?: boolean;
  readonly vethPrefix?: string;
}

/** A serializer that says when an operation queues on a pod's line. */
class WatchedSerializer extends KeyedSerializer {
  readonly queued: string[] = [];
  override run<T>(podKey: string, op: () => Promise<T>): Promise<T> {
    this.queued.push(podKey);
    return super.run(podKey, op);
  }
}

export async function world(extra: Partial<ReconcilerDeps> = {}) {
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 0 });
  const kernel = new FakeKernel();
  const dp = new Dataplane(kernel);
  await dp.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  kernel.addLink('ens6', '02:0e:00:00:00:01');
  await dp.setupEni({
    mac: '02:0e:00:00:00:01',
    deviceNumber: 1,
    primaryIp: ENI_PRIMARY,
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  });
  const serializer = new WatchedSerializer();
  const logs: LogLine[] = [];
  const reconciler = new Reconciler({
    ledger,
    dataplane: dp,
    serializer,
    log: recordingLogger(logs),
    clock: { now: () => 0 },
    vethPrefix: 'vpc',
    protectedAddresses: () => new Set([ENI_PRIMARY]),
    ...extra,
  });
  let n = 0;
  async function attach(o: AttachOptions = {}): Promise<Attachment> {
    n++;
    const key: AttachmentKey = { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' };
    const resources = planRegularPod({
      key,
      vethPrefix: o.vethPrefix ?? 'vpc',
      ip: o.ip ?? `10.0.1.${20 + n}`,
      eniId: 'eni-1',
      routeTable: o.routeTable ?? 2,
      mtu: 9001,
      snat: o.snat ?? true,
    });
    const netns = `/var/run/netns/pod-${n}`;
    await dp.create(netns, resources);
    const att: Attachment = {
      key,
      pod: { namespace: 'default', name: `web-${n}`, uid: `uid-${n}` },
      netns,
      createdAt: 0,
      ...(o.phase ? { phase: o.phase } : {}),
      resources,
    };
    if (!o.unrecorded) ledger.put(att);
    return att;
  }
  const problems = async (att: Attachment) => {
    const seen = await dp.inspect(att.netns, att.resources);
    return [...(seen.podUnreachable ? ['pod unreachable'] : []), ...seen.findings.map((f) => f.problem)];
  };
  return { ledger, kernel, dp, serializer, logs, reconciler, attach, problems };
}

export type World = Awaited<ReturnType<typeof world>>;
