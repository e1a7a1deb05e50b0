// The audit's rules: what one read of the cluster (model.ts) shows wrong, each finding naming the
// node, pod, address or ENI concerned and keyed so that two reads can be matched. Pure. A node
// whose agent cannot be read is one finding, and none of its other rules run: what is unknown is
// never reported as missing.

import { cidrContains, isCidr, isIpv4, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import { carriesVpcnetMark, NO_MANAGE_TAG, ofThisCluster } from '../../ipam/enis/eni-ownership.ts';
import { SUBNET_DISCOVERY_TAG, SUBNET_EXCLUDED_VALUE } from '../../ipam/enis/subnet-tags.ts';
import type { AttachmentRow, NodeState } from '../node/node-state.ts';
import type { ClusterRead, Ec2Eni } from './model.ts';

export type AuditClass =
  | 'unowned-address'
  | 'record-pod-gone'
  | 'address-on-two-nodes'
  | 'pod-ip-mismatch'
  | 'detached-eni'
  | 'draining-subnet-eni'
  | 'branch-mismatch'
  | 'held-address-missing'
  | 'agent-unreachable';

export const AUDIT_CLASSES: readonly AuditClass[] = [
  'unowned-address',
  'record-pod-gone',
  'address-on-two-nodes',
  'pod-ip-mismatch',
  'detached-eni',
  'draining-subnet-eni',
  'branch-mismatch',
  'held-address-missing',
  'agent-unreachable',
];

/** Classes `--repair` acts on: what the ledgers prove no pod holds. */
export const REPAIRABLE: ReadonlySet<AuditClass> = new Set(['unowned-address', 'detached-eni']);

export type AuditSeverity = 'critical' | 'warning';

export interface AuditFinding {
  readonly class: AuditClass;
  readonly severity: AuditSeverity;
  /** The finding's identity across reads. */
  readonly key: string;
  readonly node?: string;
  /** NAMESPACE/NAME. */
  readonly pod?: string;
  readonly address?: string;
  readonly eniId?: string;
  readonly subnetId?: string;
  readonly message: string;
  readonly fix: string;
  readonly repairable: boolean;
  /** ENIs whose EC2 state the finding rests on (the confirming read reads them again). */
  readonly enis: readonly string[];
}

interface NodeIndex {
  readonly node: string;
  readonly state: NodeState;
  /** Every address the pool has on its ENIs (any state). */
  readonly pooled: ReadonlySet<string>;
  readonly poolEnis: ReadonlySet<string>;
  /** Ledger address → its record. */
  readonly held: ReadonlyMap<string, AttachmentRow>;
}

function indexNode(node: string, state: NodeState): NodeIndex {
  const pooled = new Set<string>();
  for (const e of state.enis) for (const a of e.addresses) pooled.add(a.ip);
  const held = new Map<string, AttachmentRow>();
  for (const a of state.attachments) if (a.ip !== undefined) held.set(a.ip, a);
  return { node, state, pooled, poolEnis: new Set(state.enis.map((e) => e.eniId)), held };
}

const podKey = (ns: string | undefined, name: string | undefined) => `${ns ?? '?'}/${name ?? '?'}`;

/**
 * Which ENIs EC2 has an IPv4 address on (primary, secondary, or inside a delegated prefix), looked
 * up by address: the rules ask this for every held address of every node, which a scan of every
 * ENI per address would make quadratic in the cluster's size.
 */
class Ec2AddressIndex {
  readonly #byAddress = new Map<string, Ec2Eni[]>();
  /** Prefixes by their network address, per prefix length (delegated prefixes are /28s). */
  readonly #byPrefix = new Map<number, Map<number, Ec2Eni[]>>();

  constructor(enis: readonly Ec2Eni[]) {
    const add = <K>(map: Map<K, Ec2Eni[]>, key: K, eni: Ec2Eni) => {
      const list = map.get(key);
      if (list === undefined) map.set(key, [eni]);
      else list.push(eni);
    };
    for (const eni of enis) {
      for (const ip of [eni.primaryIp, ...eni.secondaryIps])
        if (ip !== undefined) add(this.#byAddress, ip, eni);
      for (const p of eni.ipv4Prefixes) {
        if (!isCidr(p)) continue;
        const { network, size } = parseCidr(p);
        const bySize = this.#byPrefix.get(size) ?? new Map<number, Ec2Eni[]>();
        this.#byPrefix.set(size, bySize);
        add(bySize, network, eni);
      }
    }
  }

  /** The ENIs `ip` is on. */
  owners(ip: string): readonly Ec2Eni[] {
    const direct = this.#byAddress.get(ip) ?? [];
    if (!isIpv4(ip) || this.#byPrefix.size === 0) return direct;
    const address = parseIpv4(ip);
    const inPrefix = [...this.#byPrefix].flatMap(
      ([size, byNetwork]) => byNetwork.get(address - (address % size)) ?? [],
    );
    return inPrefix.length === 0 ? direct : [...direct, ...inPrefix];
  }

  has(eni: Ec2Eni, ip: string): boolean {
    return this.owners(ip).includes(eni);
  }
}

export function findCandidates(read: ClusterRead): AuditFinding[] {
  const out: AuditFinding[] = [];
  const nodes: NodeIndex[] = [];
  for (const a of read.agents) {
    if (a.state === undefined) {
      out.push({
        class: 'agent-unreachable',
        severity: 'warning',
        key: `agent-unreachable ${a.node}`,
        node: a.node,
        message: `the agent of ${a.node} could not be read (${a.error ?? 'no answer'}): its node is not audited`,
        fix: `vpcnetctl status on ${a.node} (or kubectl -n kube-system logs of its vpcnet pod)`,
        repairable: false,
        enis: [],
      });
    } else nodes.push(indexNode(a.node, a.state));
  }
  const byInstance = new Map(
    nodes.flatMap((n) => (n.state.instanceId === undefined ? [] : [[n.state.instanceId, n] as const])),
  );
  const pods = new Map(read.pods.map((p) => [podKey(p.namespace, p.name), p]));
  const enis = new Map(read.enis.map((e) => [e.eniId, e]));
  const draining = new Set(
    read.subnets.filter((s) => s.tags[SUBNET_DISCOVERY_TAG] === SUBNET_EXCLUDED_VALUE).map((s) => s.subnetId),
  );
  // An address's holders by ledger, over every audited node: two is the worst thing there is.
  const holders = new Map<string, NodeIndex[]>();
  for (const n of nodes) for (const ip of n.held.keys()) holders.set(ip, [...(holders.get(ip) ?? []), n]);
  /** Where EC2 has an address on an ENI of another instance than `owner`'s. */
  const ec2 = new Ec2AddressIndex(read.enis);
  const elsewhere = (ip: string, owner: NodeIndex): Ec2Eni | undefined =>
    ec2.owners(ip).find((e) => e.instanceId !== undefined && e.instanceId !== owner.state.instanceId);
  const twoNodes = new Set<string>();

  for (const [ip, held] of holders) {
    const owner = held[0];
    if (owner === undefined) continue;
    const other = held.length > 1 ? undefined : elsewhere(ip, owner);
    if (held.length < 2 && other === undefined) continue;
    twoNodes.add(ip);
    const where =
      held.length > 1
        ? held
            .map((n) => `${n.node} (${podKey(n.held.get(ip)?.namespace, n.held.get(ip)?.pod)})`)
            .join(' and ')
        : `${owner.node} (${podKey(owner.held.get(ip)?.namespace, owner.held.get(ip)?.pod)}) while EC2 has it on ${other?.eniId} of ${other?.instanceId}${other?.instanceId !== undefined && byInstance.has(other.instanceId) ? ` (${byInstance.get(other.instanceId)?.node})` : ''}`;
    out.push({
      class: 'address-on-two-nodes',
      severity: 'critical',
      key: `address-on-two-nodes ${ip}`,
      node: held.map((n) => n.node).join(','),
      address: ip,
      ...(other === undefined ? {} : { eniId: other.eniId }),
      message: `${ip} is held on two nodes: ${where}; traffic reaches only one of them`,
      fix: `give one of the pods a new sandbox (delete the pod): vpcnetctl explain on each node shows which`,
      repairable: false,
      enis: [
        ...held.flatMap((n) => n.held.get(ip)?.eniId ?? []),
        ...(other === undefined ? [] : [other.eniId]),
      ],
    });
  }

  for (const n of nodes) {
    const busy = (n.state.spoolDepth ?? 0) > 0 || n.state.recovery !== undefined;
    for (const a of n.state.attachments) {
      // record-pod-gone: the record names a pod the API no longer has (or has anew, another UID).
      if (a.pod !== undefined && a.namespace !== undefined && !busy) {
        const pod = pods.get(podKey(a.namespace, a.pod));
        const gone = pod === undefined || (a.uid !== undefined && pod.uid !== '' && pod.uid !== a.uid);
        if (gone) {
          out.push({
            class: 'record-pod-gone',
            severity: 'warning',
            key: `record-pod-gone ${n.node} ${a.containerId} ${a.ifName}`,
            node: n.node,
            pod: podKey(a.namespace, a.pod),
            ...(a.ip === undefined ? {} : { address: a.ip }),
            ...(a.eniId === undefined ? {} : { eniId: a.eniId }),
            message: `${n.node} keeps the network of ${podKey(a.namespace, a.pod)} (sandbox ${a.containerId.slice(0, 12)}, ${a.ip ?? 'no address'}) ${pod === undefined ? 'that the API no longer has' : `whose UID is now ${pod.uid}`}: no DEL came for it`,
            fix: `the agent's dead-pod GC frees it once the sandbox's namespace is gone (VPCNET_DEAD_POD_GC); else vpcnetctl explain ${podKey(a.namespace, a.pod)} on ${n.node}`,
            repairable: false,
            enis: [],
          });
        }
      }
      // held-address-missing: a pod's address that EC2 no longer assigns its ENI.
      if (
        a.ip !== undefined &&
        a.eniId !== undefined &&
        a.branch === undefined &&
        isIpv4(a.ip) &&
        !twoNodes.has(a.ip)
      ) {
        const eni = enis.get(a.eniId);
        const onEni = eni !== undefined && eni.instanceId === n.state.instanceId && ec2.has(eni, a.ip);
        if (!onEni) {
          out.push({
            class: 'held-address-missing',
            severity: 'critical',
            key: `held-address-missing ${n.node} ${a.ip}`,
            node: n.node,
            pod: podKey(a.namespace, a.pod),
            address: a.ip,
            eniId: a.eniId,
            message: `${podKey(a.namespace, a.pod)} on ${n.node} holds ${a.ip}, which EC2 no longer assigns ${eni === undefined ? `(ENI ${a.eniId} is gone)` : `to ${a.eniId}`}: its traffic is dropped`,
            fix: 'give the pod a new sandbox (delete the pod); the address was taken away outside vpcnet',
            repairable: false,
            enis: [a.eniId],
          });
        }
      }
    }
  }

  for (const eni of read.enis) {
    const n = eni.instanceId === undefined ? undefined : byInstance.get(eni.instanceId);
    // unowned-address: on a pool ENI of an audited node, an address neither the pool nor a record has.
    if (
      n?.poolEnis.has(eni.eniId) &&
      eni.interfaceType === 'interface' &&
      eni.tags[NO_MANAGE_TAG] !== 'true'
    ) {
      for (const ip of eni.secondaryIps) {
        if (n.pooled.has(ip) || n.held.has(ip) || twoNodes.has(ip)) continue;
        out.push(unowned(n.node, eni, ip));
      }
      for (const prefix of eni.ipv4Prefixes) {
        const range = parseCidr(prefix);
        const any = [...n.pooled].some((ip) => isIpv4(ip) && cidrContains(range, parseIpv4(ip)));
        if (!any) out.push(unowned(n.node, eni, prefix));
      }
    }
    // draining-subnet-eni: still lending in a subnet tagged to be drained.
    if (n !== undefined && draining.has(eni.subnetId)) {
      const serving = n.state.attachments.filter((a) => a.eniId === eni.eniId && a.branch === undefined);
      if (serving.length > 0) {
        out.push({
          class: 'draining-subnet-eni',
          severity: 'warning',
          key: `draining-subnet-eni ${eni.eniId}`,
          node: n.node,
          eniId: eni.eniId,
          subnetId: eni.subnetId,
          message: `${eni.eniId} of ${n.node} is in ${eni.subnetId}, tagged ${SUBNET_DISCOVERY_TAG}=0 to be drained, and still serves ${serving.length} pod(s): ${serving.map((a) => `${podKey(a.namespace, a.pod)} ${a.ip ?? ''}`).join(', ')}`,
          fix: 'it is freed once those pods leave (restart them to move them), or untag the subnet if it should serve',
          repairable: false,
          enis: [eni.eniId],
        });
      }
    }
    // detached-eni: one of vpcnet's, attached to nothing and on no agent's way in or out.
    if (
      eni.status === 'available' &&
      carriesVpcnetMark({ tags: eni.tags, description: eni.description }) &&
      ofThisCluster(eni.tags, read.clusterName)
    ) {
      const pending = nodes.find((m) => m.state.pool.pendingEniIds.includes(eni.eniId));
      if (pending === undefined) {
        const created = eni.tags['node.k8s.amazonaws.com/createdAt'];
        const nodeOf = (instance: string | undefined) => {
          const name = instance === undefined ? undefined : byInstance.get(instance)?.node;
          return name === undefined ? {} : { node: name };
        };
        const forInstance = eni.tags['node.k8s.amazonaws.com/instance_id'];
        out.push({
          class: 'detached-eni',
          severity: 'warning',
          key: `detached-eni ${eni.eniId}`,
          eniId: eni.eniId,
          subnetId: eni.subnetId,
          ...nodeOf(forInstance),
          message: `${eni.eniId} (vpcnet's, created ${created ?? 'at an unknown time'} for ${forInstance ?? 'an unknown instance'}) is attached to nothing and holds ${1 + eni.secondaryIps.length} address(es) of ${eni.subnetId}`,
          fix: `vpcnetctl audit --repair --from-report FILE deletes it (or aws ec2 delete-network-interface --network-interface-id ${eni.eniId})`,
          repairable: true,
          enis: [eni.eniId],
        });
      }
    }
  }

  // The API's view of pods against the ledgers.
  const byName = new Map(nodes.map((n) => [n.node, n]));
  for (const pod of read.pods) {
    const n = pod.node === undefined ? undefined : byName.get(pod.node);
    if (n === undefined || pod.hostNetwork) continue;
    const name = podKey(pod.namespace, pod.name);
    const ledger = n.state.attachments
      .filter((a) => podKey(a.namespace, a.pod) === name)
      .flatMap((a) => a.ip ?? []);
    for (const [source, ips] of [
      ['status', pod.statusIps],
      ['vpc.amazonaws.com/pod-ips', pod.annotatedIps],
    ] as const) {
      const wrong = ips.filter((ip) => !ledger.includes(ip));
      if (wrong.length === 0) continue;
      out.push({
        class: 'pod-ip-mismatch',
        severity: 'warning',
        key: `pod-ip-mismatch ${name} ${source}`,
        node: n.node,
        pod: name,
        address: wrong.join(','),
        message: `the API's ${source} of ${name} says ${ips.join(', ')}, ${n.node}'s ledger ${ledger.length === 0 ? 'has no address for it' : `says ${ledger.join(', ')}`}`,
        fix: `the ledger is what the pod has: give the pod a new sandbox if its address is wrong (vpcnetctl explain ${name} on ${n.node})`,
        repairable: false,
        enis: [],
      });
    }
    for (const branch of pod.podEni) {
      const eni = enis.get(branch.eniId);
      const wrong =
        eni === undefined
          ? `EC2 has no ENI ${branch.eniId}`
          : branch.ip !== undefined && eni.primaryIp !== branch.ip
            ? `EC2's ${branch.eniId} has ${eni.primaryIp ?? 'no address'}, the annotation ${branch.ip}`
            : branch.mac !== undefined && eni.mac !== undefined && eni.mac !== branch.mac
              ? `EC2's ${branch.eniId} has MAC ${eni.mac}, the annotation ${branch.mac}`
              : undefined;
      if (wrong === undefined) continue;
      out.push({
        class: 'branch-mismatch',
        severity: 'warning',
        key: `branch-mismatch ${name} ${branch.eniId}`,
        node: n.node,
        pod: name,
        eniId: branch.eniId,
        ...(branch.ip === undefined ? {} : { address: branch.ip }),
        message: `the vpc.amazonaws.com/pod-eni annotation of ${name} and EC2 disagree: ${wrong}`,
        fix: 'delete the pod so that the resource controller gives its new one a branch ENI afresh',
        repairable: false,
        enis: [branch.eniId],
      });
    }
  }
  return out;
}

function unowned(node: string, eni: Ec2Eni, address: string): AuditFinding {
  return {
    class: 'unowned-address',
    severity: 'warning',
    key: `unowned-address ${eni.eniId} ${address}`,
    node,
    address,
    eniId: eni.eniId,
    subnetId: eni.subnetId,
    message: `EC2 assigns ${address} to ${eni.eniId} of ${node}, which neither its pool nor a record has: taken from the subnet, used by nobody`,
    fix: `vpcnetctl audit --repair --from-report FILE gives it back (or aws ec2 unassign-private-ip-addresses --network-interface-id ${eni.eniId} ${address.includes('/') ? '--ipv4-prefixes' : '--private-ip-addresses'} ${address})`,
    repairable: true,
    enis: [eni.eniId],
  };
}
