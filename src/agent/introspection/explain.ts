// `vpcnetctl explain NS/POD` (GET /v1/explain): why a pod has (no) network, in plain words. Its
// ledger records, each recorded resource judged against the kernel as CHECK judges it, its ENI as
// EC2 describes it now, and its recent failed CNI operations. Read-only: it repairs nothing.
import type { Cloud, InstanceMetadata } from '../../cloud/cloud.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { errorText } from '../../infra/error-text.ts';
import type { PoolManager } from '../../ipam/pool/pool-manager.ts';
import { lendableAddresses } from '../../ipam/prefixes/prefixes.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import {
  type Attachment,
  attachmentHostVeth,
  attachmentKeyString,
  sameAttachmentKey,
} from '../../plan/attachment.ts';
import { planBranchShared } from '../../plan/branch-plan.ts';
import { describeResource, type Finding } from '../../plan/kinds.ts';
import { type Resource, vpcAddressOf } from '../../plan/resource.ts';
import type { RecentCniError, RecentErrors } from './recent-errors.ts';

export interface ExplainDeps {
  readonly ledger: Ledger;
  readonly dataplane: Pick<Dataplane, 'inspect'>;
  readonly cloud: Pick<Cloud, 'describeInstanceEnis'>;
  readonly meta: Pick<InstanceMetadata, 'instanceId'>;
  /** The pool's view: an ENI EC2 no longer lists as attached (since when). */
  readonly manager: Pick<PoolManager, 'lostEni'>;
  readonly recentErrors: Pick<RecentErrors, 'ofPod'>;
}

export type ResourceState = 'present' | 'missing' | 'different' | 'unchecked';

export interface ResourceVerdict {
  readonly kind: Resource['kind'];
  readonly what: string;
  readonly state: ResourceState;
  /** What the kernel (or EC2) shows instead, or why it could not be judged. */
  readonly problem?: string;
}

export interface EniVerdict {
  readonly eniId: string;
  readonly branch: boolean;
  /** true / false as EC2 says now; undefined when it was not asked or did not answer. */
  readonly attached?: boolean;
  readonly addressAssigned?: boolean;
  readonly text: string;
}

export interface AttachmentExplanation {
  readonly key: string;
  readonly containerId: string;
  readonly ifName: string;
  readonly netns: string;
  readonly phase: 'ready' | 'adding';
  readonly createdAt: string;
  readonly ip?: string;
  readonly hostVeth?: string;
  readonly resources: readonly ResourceVerdict[];
  readonly eni?: EniVerdict;
  /** The plain-words conclusion for this sandbox. */
  readonly summary: string;
}

export interface PodExplanation {
  readonly namespace: string;
  readonly pod: string;
  readonly attachments: readonly AttachmentExplanation[];
  readonly recentErrors: readonly RecentCniError[];
  /** Plain words, first what matters most. */
  readonly summary: readonly string[];
}

const isPodSide = (r: Resource) => 'side' in r && r.side === 'pod';

function judge(
  r: Resource,
  findings: readonly Finding[],
  podUnreachable: string | undefined,
): ResourceVerdict {
  const mine = findings.filter((f) => f.resource === r).map((f) => f.problem);
  const base = { kind: r.kind, what: describeResource(r) };
  if (mine.length > 0) {
    const state = mine.every((p) => p.includes('missing')) ? 'missing' : 'different';
    return { ...base, state, problem: mine.join('; ') };
  }
  if (podUnreachable !== undefined && isPodSide(r))
    return { ...base, state: 'unchecked', problem: `pod namespace unreachable: ${podUnreachable}` };
  return { ...base, state: 'present' };
}

/** A VPC address is judged by EC2, not the kernel: present only while EC2 lists it on its ENI. */
function withEc2(v: ResourceVerdict, eni: EniVerdict | undefined): ResourceVerdict {
  if (v.kind !== 'vpcAddress' || eni === undefined || eni.branch) return v;
  if (eni.attached === undefined) return { ...v, state: 'unchecked', problem: eni.text };
  return eni.attached && eni.addressAssigned ? v : { ...v, state: 'missing', problem: eni.text };
}

/** The resources of the binding a branch-ENI sandbox holds (as CHECK judges them), or why none. */
function bindingShare(ledger: Ledger, att: Attachment): { resources: Resource[]; note?: string } {
  if (att.branch === undefined) return { resources: [] };
  const b = ledger.binding(att.branch);
  if (!b) return { resources: [], note: `its branch binding ${att.branch} is not recorded` };
  if (b.supersededBy !== undefined)
    return {
      resources: [],
      note: `its branch ENI's VLAN or address now belongs to another pod (${b.supersededBy})`,
    };
  if (!b.holder || !sameAttachmentKey(b.holder, att.key))
    return {
      resources: [],
      note: `another sandbox (container ${b.holder?.containerId ?? 'none'}) holds its branch ENI`,
    };
  return { resources: planBranchShared(b, attachmentHostVeth(att)) };
}

type Described = Awaited<ReturnType<Cloud['describeInstanceEnis']>> | { error: string };

function eniVerdict(deps: ExplainDeps, att: Attachment, described: Described): EniVerdict | undefined {
  if (att.branch !== undefined) {
    const b = deps.ledger.binding(att.branch);
    if (!b) return undefined;
    const text = `branch ENI ${b.key.eniId} (address ${b.ip}) reached through VLAN ${b.vlanId} on trunk ${b.trunkDev}; its EC2 state is the resource controller's to keep`;
    return { eniId: b.key.eniId, branch: true, text };
  }
  const address = vpcAddressOf(att.resources);
  if (address === undefined) return undefined;
  const { eniId, ip } = address;
  if ('error' in described)
    return { eniId, branch: false, text: `EC2 could not be asked about ENI ${eniId}: ${described.error}` };
  const eni = described.find((e) => e.eniId === eniId);
  if (eni === undefined) {
    const lost = deps.manager.lostEni(eniId);
    const since =
      lost === undefined ? '' : ` (the agent's sync noticed at ${new Date(lost.since).toISOString()})`;
    return {
      eniId,
      branch: false,
      attached: false,
      text: `ENI ${eniId} is not attached to this instance in EC2${since}: the pod's address ${ip} cannot carry traffic; the pod needs a new sandbox`,
    };
  }
  const assigned = eni.primaryIp === ip || lendableAddresses(eni).includes(ip);
  return {
    eniId,
    branch: false,
    attached: true,
    addressAssigned: assigned,
    text: assigned
      ? `ENI ${eniId} is attached to this instance (device ${eni.deviceNumber}) and EC2 lists ${ip} on it`
      : `ENI ${eniId} is attached, but EC2 no longer lists ${ip} on it: traffic to the pod will not arrive`,
  };
}

function attachmentSummary(
  att: Attachment,
  resources: readonly ResourceVerdict[],
  eni: EniVerdict | undefined,
  note?: string,
): string {
  if (att.phase === 'adding')
    return 'its ADD has not finished: it is still running, or the agent stopped during it (the agent removes a half-done ADD when it starts)';
  const bad = resources.filter((r) => r.state === 'missing' || r.state === 'different');
  const unchecked = resources.filter((r) => r.state === 'unchecked');
  const parts: string[] = [];
  if (bad.length > 0) {
    parts.push(
      `${bad.length} of ${resources.length} recorded resources are missing or different: ${bad.map((r) => r.what).join(', ')}. The reconcile loop restores them on its next pass (a missing veth: the pod network is built again with the same address) while the pod's namespace exists`,
    );
  }
  if (unchecked.length > 0)
    parts.push(`${unchecked.length} resource(s) could not be checked: ${unchecked[0]?.problem ?? ''}`);
  if (eni && (eni.attached === false || eni.addressAssigned === false)) parts.push(eni.text);
  if (note !== undefined) parts.push(note);
  return parts.length === 0
    ? 'everything recorded is in place in the kernel, and EC2 agrees: this sandbox has its network'
    : parts.join('. ');
}

async function explainAttachment(
  deps: ExplainDeps,
  att: Attachment,
  described: Described,
): Promise<AttachmentExplanation> {
  const share = bindingShare(deps.ledger, att);
  const all = [...att.resources, ...share.resources];
  const eni = eniVerdict(deps, att, described);
  let resources: ResourceVerdict[];
  try {
    const seen = await deps.dataplane.inspect(att.netns, all);
    resources = all.map((r) => withEc2(judge(r, seen.findings, seen.podUnreachable), eni));
  } catch (err) {
    const problem = `the kernel could not be read: ${errorText(err)}`;
    resources = all.map((r) => ({ kind: r.kind, what: describeResource(r), state: 'unchecked', problem }));
  }
  const ip =
    vpcAddressOf(att.resources)?.ip ??
    (att.branch === undefined ? undefined : deps.ledger.binding(att.branch)?.ip);
  const hostVeth = attachmentHostVeth(att);
  return {
    key: attachmentKeyString(att.key),
    containerId: att.key.containerId,
    ifName: att.key.ifName,
    netns: att.netns,
    phase: att.phase ?? 'ready',
    createdAt: new Date(att.createdAt).toISOString(),
    ...(ip === undefined ? {} : { ip }),
    ...(hostVeth === '' ? {} : { hostVeth }),
    resources,
    ...(eni === undefined ? {} : { eni }),
    summary: attachmentSummary(att, resources, eni, share.note),
  };
}

function noRecordSummary(namespace: string, pod: string, errors: readonly RecentCniError[]): string[] {
  const first = `vpcnet has no record of ${namespace}/${pod}: no ADD for it reached this node's agent, or every ADD failed and was undone, or its network was deleted (DEL).`;
  if (errors.length > 0) {
    const e = errors[0] as RecentCniError;
    return [
      first,
      `Its latest failure: ${e.command} at ${e.time}${e.code === undefined ? '' : ` (CNI error ${e.code})`}: ${e.message}`,
    ];
  }
  return [
    first,
    "The agent saw no failed CNI operation for it either: the runtime probably did not run the plugin (is the pod on this node? does the CNI conf dir hold 10-vpcnet.conflist? see the kubelet's events for the pod).",
  ];
}

export async function explainPod(deps: ExplainDeps, namespace: string, pod: string): Promise<PodExplanation> {
  const records = deps.ledger.list().filter((a) => a.pod.namespace === namespace && a.pod.name === pod);
  const recentErrors = deps.recentErrors.ofPod(namespace, pod);
  if (records.length === 0)
    return {
      namespace,
      pod,
      attachments: [],
      recentErrors,
      summary: noRecordSummary(namespace, pod, recentErrors),
    };
  let described: Described = [];
  if (records.some((a) => a.branch === undefined && vpcAddressOf(a.resources) !== undefined)) {
    described = await deps.cloud
      .describeInstanceEnis(deps.meta.instanceId)
      .catch((err: unknown) => ({ error: errorText(err) }));
  }
  const attachments: AttachmentExplanation[] = [];
  for (const att of records) attachments.push(await explainAttachment(deps, att, described));
  const summary = attachments.map(
    (a) => `Sandbox ${a.containerId.slice(0, 12)} ${a.ifName} (${a.ip ?? 'no address'}): ${a.summary}.`,
  );
  if (records.length > 1)
    summary.push(
      `${records.length} sandboxes are recorded for this pod: the runtime replaced the sandbox and the older ones wait for their DEL (each removes only what it owns).`,
    );
  if (recentErrors.length > 0)
    summary.push(`${recentErrors.length} recent failed CNI operation(s) for this pod (below).`);
  return { namespace, pod, attachments, recentErrors, summary };
}
