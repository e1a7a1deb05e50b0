// A pod's vpc.amazonaws.com/pod-eni annotation is a claim, not a fact: anyone who can create pods can
// write one, or copy another pod's (docs/design.md, Trust boundaries). Before an ADD builds anything
// from it, the claim is checked against the sources that own each fact:
//   - EC2 owns which branch ENI sits on this node's trunk under which VLAN ID, and the ENI's MAC,
//     address and subnet (trunk-facts.ts): the annotation must say exactly what EC2 says;
//   - the node's own pool and regular pods own their addresses: a branch claim on one is refused;
//   - a binding of another pod that claims the same VLAN ID, address or ENI is taken from it
//     (superseded) only when the Kubernetes API, read directly, no longer shows that pod with that
//     branch ENI, and a fresh EC2 read shows the VLAN ID and address on the claiming pod's ENI now.
// Anything else fails the ADD, names the conflict and the other pod, and changes nothing.
import {
  CNI_ERR_BAD_POD_ENI_ANNOTATION,
  CNI_ERR_BRANCH_CLAIM_CONFLICT,
  CNI_ERR_TRY_AGAIN_LATER,
  CniError,
} from '../../cni/errors.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { type BranchBinding, bindingKeyString } from '../../plan/binding.ts';
import { vpcAddressOf } from '../../plan/resource.ts';
import { POD_ENI_ANNOTATION, parsePodEniAnnotation } from '../../pods/pod-eni.ts';
import type { PodSource } from '../../pods/watch/pod-source.ts';
import type { AddressSource } from '../address-source.ts';
import type { AgentCounters, AnnotationRejection } from '../stats.ts';
import type { BranchTarget } from './assignment.ts';
import type { TrunkBranch, TrunkFactsSource } from './trunk-facts.ts';

export interface BranchClaimDeps {
  readonly ledger: Ledger;
  readonly addresses: Pick<AddressSource, 'holds'>;
  readonly pods: PodSource;
  readonly trunkFacts: TrunkFactsSource;
  readonly counters: AgentCounters;
  readonly log: Logger;
}

/** What the ADD may do with the claim: the other pods' bindings it takes the VLAN ID or address from. */
export interface CheckedClaim {
  readonly supersede: readonly string[];
}

function refuse(
  d: BranchClaimDeps,
  t: BranchTarget,
  reason: AnnotationRejection,
  code: number,
  msg: string,
  details: string,
  other?: BranchBinding,
): never {
  d.counters.rejectAnnotation(reason);
  d.log.warn('pod-eni annotation refused', {
    reason,
    pod: { namespace: t.pod.namespace, name: t.pod.name, uid: t.pod.uid },
    eni: t.eni.eniId,
    vlanId: t.eni.vlanId,
    ip: t.eni.ip,
    ...(other === undefined ? {} : { otherPod: other.pod, otherBinding: bindingKeyString(other.key) }),
    why: details,
  });
  throw new CniError(code, msg, details);
}

/** The annotation's fields that EC2 contradicts, in its words. */
function contradictions(t: BranchTarget, ec2: TrunkBranch): string[] {
  const out: string[] = [];
  const { eni } = t;
  if (ec2.vlanId !== eni.vlanId) out.push(`vlanId ${eni.vlanId}, EC2 says ${ec2.vlanId}`);
  if (ec2.mac !== eni.mac) out.push(`ifAddress ${eni.mac}, EC2 says ${ec2.mac}`);
  if (ec2.ip !== eni.ip) out.push(`privateIp ${eni.ip}, EC2 says ${ec2.ip}`);
  if (ec2.subnetCidr !== eni.subnetCidr) out.push(`subnetCidr ${eni.subnetCidr}, EC2 says ${ec2.subnetCidr}`);
  return out;
}

/** The regular pod (or the node's pool) that owns `ip`, in words; undefined when none does. */
function regularOwner(d: BranchClaimDeps, ip: string): string | undefined {
  const att = d.ledger.list().find((a) => a.branch === undefined && vpcAddressOf(a.resources)?.ip === ip);
  if (att) {
    const { namespace, name } = att.pod;
    return namespace && name ? `pod ${namespace}/${name}` : `container ${att.key.containerId}`;
  }
  if (d.ledger.recovered().some((r) => r.ip === ip)) return 'a pod recovered after the ledger was lost';
  if (d.addresses.holds?.(ip)) return "this node's own address pool";
  return undefined;
}

/** What `b` shares with the claim, in words, or undefined when nothing. */
function sharedWith(t: BranchTarget, b: BranchBinding): string | undefined {
  if (b.key.eniId === t.eni.eniId) return `branch ENI ${t.eni.eniId}`;
  if (b.vlanId === t.eni.vlanId && b.trunkDev === t.trunk.dev)
    return `VLAN ID ${t.eni.vlanId} on ${t.trunk.dev}`;
  if (b.ip === t.eni.ip) return `address ${t.eni.ip}`;
  return undefined;
}

/** Whether the API, read directly, still shows `b`'s pod with `b`'s branch ENI. Throws when it cannot say. */
async function stillClaimed(pods: PodSource, b: BranchBinding): Promise<boolean> {
  const { namespace, name, uid } = b.pod;
  if (!namespace || !name) return false;
  const pod = await (pods.read ?? pods.lookup).call(pods, namespace, name, uid);
  if (pod === undefined || (uid !== undefined && pod.uid !== uid)) return false;
  const annotation = pod.annotations[POD_ENI_ANNOTATION];
  if (annotation === undefined) return false;
  try {
    return parsePodEniAnnotation(annotation).eniId === b.key.eniId;
  } catch {
    return false;
  }
}

export async function checkBranchClaim(d: BranchClaimDeps, t: BranchTarget): Promise<CheckedClaim> {
  const { eni, trunk } = t;
  const which = `pod ${t.pod.namespace}/${t.pod.name}`;
  const ec2 = await d.trunkFacts.branch(trunk.eniId, eni.eniId);
  if (ec2 === undefined) {
    refuse(
      d,
      t,
      'notOnTrunk',
      CNI_ERR_TRY_AGAIN_LATER,
      `${which}: EC2 does not show branch ENI ${eni.eniId} on this node's trunk ${trunk.eniId}`,
      'the pod-eni annotation is refused until DescribeTrunkInterfaceAssociations lists it',
    );
  }
  const wrong = contradictions(t, ec2);
  if (wrong.length > 0) {
    refuse(
      d,
      t,
      'contradictsEc2',
      CNI_ERR_BAD_POD_ENI_ANNOTATION,
      `${which}: the pod-eni annotation contradicts EC2 for branch ENI ${eni.eniId}`,
      `annotation says ${wrong.join('; ')}`,
    );
  }
  const owner = regularOwner(d, eni.ip);
  if (owner !== undefined) {
    refuse(
      d,
      t,
      'regularAddress',
      CNI_ERR_BRANCH_CLAIM_CONFLICT,
      `${which}: branch ENI address ${eni.ip} belongs to ${owner}`,
      'a branch ENI never takes an address of the node or of a regular pod',
    );
  }
  const mine = bindingKeyString({ podUid: t.pod.uid, eniId: eni.eniId });
  const supersede: string[] = [];
  for (const b of d.ledger.bindings()) {
    const key = bindingKeyString(b.key);
    if (key === mine || b.supersededBy !== undefined) continue;
    const shared = sharedWith(t, b);
    if (shared === undefined) continue;
    const other = `pod ${b.pod.namespace}/${b.pod.name}`;
    let claimed: boolean;
    try {
      claimed = await stillClaimed(d.pods, b);
    } catch (err) {
      refuse(
        d,
        t,
        'apiUnreachable',
        CNI_ERR_TRY_AGAIN_LATER,
        `${which}: ${shared} is held by ${other}, and the Kubernetes API cannot say whether it still is`,
        errorText(err),
        b,
      );
    }
    if (claimed) {
      refuse(
        d,
        t,
        'heldByLivePod',
        CNI_ERR_BRANCH_CLAIM_CONFLICT,
        `${which}: ${shared} belongs to ${other} (UID ${b.key.podUid}), which the Kubernetes API still shows with branch ENI ${b.key.eniId}`,
        'nothing of the other pod is changed',
        b,
      );
    }
    const now = await d.trunkFacts.branch(trunk.eniId, eni.eniId, { fresh: true });
    if (now === undefined || now.vlanId !== eni.vlanId || now.ip !== eni.ip) {
      refuse(
        d,
        t,
        'notOnTrunk',
        CNI_ERR_TRY_AGAIN_LATER,
        `${which}: ${shared} was ${other}'s, and EC2 does not show it on branch ENI ${eni.eniId} now`,
        'the other pod is gone from the Kubernetes API; waiting for EC2 to agree',
        b,
      );
    }
    supersede.push(key);
  }
  return { supersede };
}
