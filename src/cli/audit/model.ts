// What one read of a cluster gives the audit: every agent's state (its ledger records and its
// pool), every pod as the API has it, and EC2's ENIs and subnets of the VPC, each parsed once
// here into plain values the finding rules (findings.ts) work on.
import type { XmlElement } from '../../cloud/ec2-query/xml-reader.ts';
import { type NodeState, parseNodeState } from '../node/node-state.ts';

export interface AgentRead {
  readonly node: string;
  /** The agent's state; undefined when it could not be read (`error` says why). */
  readonly state?: NodeState;
  readonly error?: string;
}

export interface PodView {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly node?: string;
  readonly hostNetwork: boolean;
  /** status.podIPs (else status.podIP): what the kubelet reported. */
  readonly statusIps: readonly string[];
  /** vpc.amazonaws.com/pod-ips, which the agent writes with ANNOTATE_POD_IP. */
  readonly annotatedIps: readonly string[];
  /** vpc.amazonaws.com/pod-eni: the branch ENIs the resource controller gave the pod. */
  readonly podEni: readonly {
    readonly eniId: string;
    readonly ip?: string;
    readonly mac?: string;
    readonly vlanId?: number;
  }[];
}

export interface Ec2Eni {
  readonly eniId: string;
  readonly subnetId: string;
  /** `in-use` or `available` (attached to nothing). */
  readonly status: string;
  readonly interfaceType: string;
  readonly instanceId?: string;
  readonly deviceIndex?: number;
  readonly mac?: string;
  readonly primaryIp?: string;
  readonly secondaryIps: readonly string[];
  readonly ipv4Prefixes: readonly string[];
  readonly description: string;
  readonly tags: Readonly<Record<string, string>>;
}

export interface Ec2Subnet {
  readonly subnetId: string;
  readonly cidr: string;
  readonly availabilityZone: string;
  readonly availableIpCount: number;
  readonly tags: Readonly<Record<string, string>>;
}

/** One read of everything. */
export interface ClusterRead {
  readonly agents: readonly AgentRead[];
  readonly pods: readonly PodView[];
  readonly enis: readonly Ec2Eni[];
  readonly subnets: readonly Ec2Subnet[];
  /** CLUSTER_NAME: ENIs tagged for another cluster are not this one's to report. */
  readonly clusterName?: string;
}

const tagsOf = (xml: XmlElement): Record<string, string> =>
  Object.fromEntries(xml.items('tagSet').map((t) => [t.string('key') ?? '', t.string('value') ?? '']));

/** One `<item>` of DescribeNetworkInterfaces' networkInterfaceSet. */
export function readEc2Eni(xml: XmlElement): Ec2Eni {
  const attachment = xml.child('attachment');
  const addresses = xml.items('privateIpAddressesSet');
  const primaryIp = xml.string('privateIpAddress');
  const instanceId = attachment?.string('instanceId');
  const deviceIndex = attachment?.int('deviceIndex');
  const mac = xml.string('macAddress');
  return {
    eniId: xml.string('networkInterfaceId') ?? '?',
    subnetId: xml.string('subnetId') ?? '?',
    status: xml.string('status') ?? (attachment === undefined ? 'available' : 'in-use'),
    interfaceType: xml.string('interfaceType') ?? 'interface',
    ...(instanceId === undefined ? {} : { instanceId }),
    ...(deviceIndex === undefined ? {} : { deviceIndex }),
    ...(mac === undefined ? {} : { mac: mac.toLowerCase() }),
    ...(primaryIp === undefined ? {} : { primaryIp }),
    secondaryIps: addresses
      .filter((a) => a.bool('primary') !== true)
      .flatMap((a) => a.string('privateIpAddress') ?? []),
    ipv4Prefixes: xml.items('ipv4PrefixSet').flatMap((p) => p.string('ipv4Prefix') ?? []),
    description: xml.string('description') ?? '',
    tags: tagsOf(xml),
  };
}

export function readEc2Subnet(xml: XmlElement): Ec2Subnet {
  return {
    subnetId: xml.string('subnetId') ?? '?',
    cidr: xml.string('cidrBlock') ?? '?',
    availabilityZone: xml.string('availabilityZone') ?? '?',
    availableIpCount: xml.int('availableIpAddressCount') ?? 0,
    tags: tagsOf(xml),
  };
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function ipList(text: string | undefined): string[] {
  if (text === undefined || text.trim() === '') return [];
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function podEniOf(text: string | undefined): PodView['podEni'] {
  if (text === undefined) return [];
  try {
    const list = JSON.parse(text) as unknown;
    if (!Array.isArray(list)) return [];
    return list.map((raw) => {
      const e = obj(raw);
      const vlan = typeof e.vlanId === 'number' ? e.vlanId : undefined;
      const ip = str(e.privateIp);
      const mac = str(e.ifAddress);
      return {
        eniId: str(e.eniId) ?? '?',
        ...(ip === undefined ? {} : { ip }),
        ...(mac === undefined ? {} : { mac: mac.toLowerCase() }),
        ...(vlan === undefined ? {} : { vlanId: vlan }),
      };
    });
  } catch {
    return [{ eniId: '(unreadable annotation)' }];
  }
}

/** One pod of a PodList, as the audit compares it. */
export function readPod(raw: unknown): PodView {
  const p = obj(raw);
  const meta = obj(p.metadata);
  const spec = obj(p.spec);
  const status = obj(p.status);
  const annotations = obj(meta.annotations);
  const podIps = Array.isArray(status.podIPs) ? status.podIPs.flatMap((x) => str(obj(x).ip) ?? []) : [];
  const single = str(status.podIP);
  const node = str(spec.nodeName);
  return {
    namespace: str(meta.namespace) ?? '',
    name: str(meta.name) ?? '',
    uid: str(meta.uid) ?? '',
    ...(node === undefined ? {} : { node }),
    hostNetwork: spec.hostNetwork === true,
    statusIps: podIps.length > 0 ? podIps : single === undefined ? [] : [single],
    annotatedIps: ipList(str(annotations['vpc.amazonaws.com/pod-ips'])),
    podEni: podEniOf(str(annotations['vpc.amazonaws.com/pod-eni'])),
  };
}

export function readAgent(node: string, state: unknown): AgentRead {
  return { node, state: parseNodeState(state) };
}
