// A node with a trunk and pods with security groups, for unit tests of branch-ENI ADD and DEL: the
// real ledger, the real dataplane on the fake kernel, and a pod source a test edits (as the VPC
// resource controller would).

import type { ForwardedRequest, ForwardedResponse } from '../../../cni/wire.ts';
import { KeyedSerializer } from '../../../infra/keyed-serializer.ts';
import { Ledger } from '../../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../../ledger/testing/memory-store.ts';
import { attachmentHostVeth } from '../../../plan/attachment.ts';
import type { EnforcingMode } from '../../../plan/binding.ts';
import { planBranchShared } from '../../../plan/branch-plan.ts';
import { findDrift, findOrphans, identityOf } from '../../../plan/kinds.ts';
import { POD_ENI_ANNOTATION } from '../../../pods/pod-eni.ts';
import type { PodMetadata, PodSource } from '../../../pods/watch/pod-source.ts';
import { type ReconcileReport, Reconciler } from '../../../reconcile/reconciler.ts';
import { handleCni } from '../../cni-ops/cni-handler.ts';
import type { OperationContext } from '../../context.ts';
import { sweepRecovered } from '../../recovery/recovered-release.ts';
import { type RecoveryAddresses, recoverFromNode } from '../../recovery/recovery.ts';
import { listPool, opContext, type TestContext } from '../../testing/op-context.ts';
import { FakeTrunkFacts } from './fake-trunk-facts.ts';

/** The pool as recovery sees it when no address of it is a branch pod's: nothing listed. */
const noPoolAddresses: RecoveryAddresses = {
  listed: () => new Map(),
  eniOf: () => undefined,
  hold: () => true,
  isFree: () => false,
  quarantine: () => {},
  cooldownMs: 30_000,
};

export const TRUNK = { dev: 'eth2', mac: '02:0e:00:00:00:99', eniId: 'eni-0000000000000trunk' };

export interface BranchPod {
  readonly name: string;
  readonly uid: string;
  readonly eniId: string;
  readonly mac: string;
  readonly ip: string;
  readonly vlanId: number;
}

export function branchPod(n: number, vlanId = n, ip = `10.0.8.${10 + n}`): BranchPod {
  const hex = n.toString(16).padStart(2, '0');
  return {
    name: `sg-${n}`,
    uid: `uid-sg-${n}`,
    eniId: `eni-00000000000000b${hex}`,
    mac: `0a:00:00:00:b0:${hex}`,
    ip,
    vlanId,
  };
}

export const BRANCH_SUBNET = { subnetId: 'subnet-0branch', cidr: '10.0.8.0/24' };

/**
 * The Kubernetes API's pods (and, through `ec2`, what the resource controller associated on the
 * trunk). `put` plays the controller: it annotates the pod and associates its branch ENI in EC2;
 * `annotate` writes an annotation alone, as anyone who can write pods could.
 */
export class TestPods implements PodSource {
  readonly pods = new Map<string, PodMetadata>();
  readonly ec2 = new FakeTrunkFacts();
  /** Direct reads (not cache lookups) the agent made. */
  reads = 0;
  /** When set, a direct read fails (the API is unreachable). */
  failReads = false;

  put(p: BranchPod, annotated = true): void {
    this.ec2.associate({
      eniId: p.eniId,
      trunkEniId: TRUNK.eniId,
      vlanId: p.vlanId,
      mac: p.mac,
      ip: p.ip,
      subnetId: BRANCH_SUBNET.subnetId,
      subnetCidr: BRANCH_SUBNET.cidr,
    });
    this.annotate(p, annotated);
  }

  annotate(p: BranchPod, annotated = true): void {
    const value = JSON.stringify([
      { eniId: p.eniId, ifAddress: p.mac, privateIp: p.ip, vlanId: p.vlanId, subnetCidr: BRANCH_SUBNET.cidr },
    ]);
    this.pods.set(`default/${p.name}`, {
      namespace: 'default',
      name: p.name,
      uid: p.uid,
      nodeName: 'node1',
      annotations: annotated ? { [POD_ENI_ANNOTATION]: value } : {},
      requestsPodEni: true,
    });
  }
  delete(p: BranchPod): void {
    this.pods.delete(`default/${p.name}`);
  }
  async lookup(namespace: string, name: string): Promise<PodMetadata | undefined> {
    return this.pods.get(`${namespace}/${name}`);
  }
  async listOnNode(): Promise<readonly PodMetadata[]> {
    return [...this.pods.values()];
  }
  async read(namespace: string, name: string): Promise<PodMetadata | undefined> {
    this.reads++;
    if (this.failReads) throw new Error('connect ECONNREFUSED (the test made the API unreachable)');
    return this.pods.get(`${namespace}/${name}`);
  }
}

export interface BranchWorld {
  readonly ctx: TestContext;
  readonly pods: TestPods;
  cni(
    command: 'ADD' | 'DEL' | 'CHECK',
    pod: BranchPod,
    sandbox: string,
    netns?: string,
    ifName?: string,
  ): Promise<ForwardedResponse>;
  /** Problems of the holder's network and the binding's shared resources (empty = the pod is whole). */
  holderProblems(pod: BranchPod): Promise<string[]>;
  /** What of vpcnet's kind is on the node and no record owns. */
  orphans(): Promise<string[]>;
  /** One pass of the reconcile loop (what the agent runs every VPCNET_RECONCILE_SECONDS). */
  reconcile(): Promise<ReconcileReport>;
  /**
   * The agent restarts and finds its ledger lost: an empty ledger, recovery from the node (the
   * kernel as it is, the pods as `pods` shows them, EC2 as `pods.ec2`), then the start-up pass.
   */
  restartWithLostLedger(): Promise<ReconcileReport>;
}

export async function branchWorld(
  mode: EnforcingMode = 'strict',
  trunk: () => typeof TRUNK | undefined = () => TRUNK,
  over: Partial<OperationContext> = {},
): Promise<BranchWorld> {
  const pods = new TestPods();
  let ctx = await opContext(listPool(['10.0.1.5', '10.0.1.6', '10.0.1.7']), {
    enablePodEni: true,
    pods,
    trunk,
    trunkFacts: pods.ec2,
    enforcingMode: mode,
    ...over,
  });
  ctx.kernel.addLink(TRUNK.dev, TRUNK.mac, { up: true, mtu: 9001 });
  const serializer = new KeyedSerializer();
  const reconcilerOf = (c: TestContext) =>
    new Reconciler({
      ledger: c.ledger,
      dataplane: c.dataplane,
      serializer,
      log: c.log,
      clock: { now: Date.now },
      vethPrefix: 'vpc',
      protectedAddresses: () => new Set(),
      sweepRecovered: (node) =>
        sweepRecovered(
          { ledger: c.ledger, dataplane: c.dataplane, addresses: c.addresses, log: c.log, pods },
          node,
        ),
    });
  let reconciler = reconcilerOf(ctx);
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' });
  return {
    get ctx() {
      return ctx;
    },
    pods,
    cni(command, pod, sandbox, netns = `/var/run/netns/${sandbox}`, ifName = 'eth0') {
      const req: ForwardedRequest = {
        env: {
          CNI_COMMAND: command,
          CNI_CONTAINERID: sandbox,
          CNI_NETNS: netns,
          CNI_IFNAME: ifName,
          CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
        },
        stdin: conf,
      };
      return handleCni({ ctx, serializer }, req);
    },
    async holderProblems(pod) {
      const b = ctx.ledger.bindings().find((x) => x.key.podUid === pod.uid && x.supersededBy === undefined);
      if (!b) return ['no binding'];
      const holder = b.holder && ctx.ledger.get(b.holder);
      if (!holder) return ['no holder'];
      const seen = await ctx.dataplane.inspect(holder.netns, holder.resources);
      const node = await ctx.dataplane.observeNode();
      return [
        ...(seen.podUnreachable ? ['pod unreachable'] : []),
        ...seen.findings.map((f) => f.problem),
        ...findDrift(planBranchShared(b, attachmentHostVeth(holder)), { node }).map((f) => f.problem),
      ];
    },
    reconcile: () => reconciler.runOnce(),
    async restartWithLostLedger() {
      const ledger = await Ledger.open(new MemoryLedgerStore(), { now: Date.now });
      ctx = { ...ctx, ledger };
      reconciler = reconcilerOf(ctx);
      await recoverFromNode(
        {
          ledger,
          addresses: noPoolAddresses,
          dataplane: ctx.dataplane,
          pods,
          log: ctx.log,
          now: Date.now,
          vethPrefix: 'vpc',
          protectedAddresses: new Set(),
          branches: { trunkEniId: TRUNK.eniId, trunkFacts: pods.ec2, defaultMode: mode },
        },
        { reason: 'ledgerMissing' },
      );
      return reconciler.runOnce({ startUp: true });
    },
    async orphans() {
      const owned = new Set([
        ...ctx.ledger.list().flatMap((a) => a.resources.map(identityOf)),
        ...ctx.ledger.bindings().flatMap((b) => b.resources.map(identityOf)),
        ...ctx.ledger.recovered().flatMap((r) => r.resources.map(identityOf)),
      ]);
      return findOrphans(await ctx.dataplane.observeNode(), {
        vethPrefix: 'vpc',
        owns: (id) => owned.has(id),
        protectedAddresses: new Set(),
      }).map((o) => o.description);
    },
  };
}
