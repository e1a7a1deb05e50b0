// The audit's rules on reads built by hand: each class from the smallest read that shows it, the
// precedence that keeps one fault one finding (an address on two nodes is not also "missing" and
// "unowned"), and what the rules leave alone (an unreadable agent's node, a pending ENI, a node
// whose DELs are still spooled, host-network pods, the primary address of an ENI).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseNodeState } from '../node/node-state.ts';
import { findCandidates } from './findings.ts';
import type { ClusterRead, Ec2Eni, PodView } from './model.ts';

const SUBNET = {
  subnetId: 'subnet-a',
  cidr: '10.0.0.0/20',
  availabilityZone: 'z',
  availableIpCount: 4000,
  tags: {},
};

function agent(node: string, instanceId: string, over: Record<string, unknown> = {}) {
  const {
    enis = [],
    attachments = [],
    bindings = [],
    pool = {},
    ...rest
  } = over as {
    enis?: unknown[];
    attachments?: unknown[];
    bindings?: unknown[];
    pool?: Record<string, unknown>;
  };
  return {
    node,
    state: parseNodeState({
      instanceId,
      vpcId: 'vpc-1',
      attachments,
      bindings,
      pool: { enis, ...pool },
      ...rest,
    }),
  };
}

function record(ns: string, pod: string, ip: string, eniId: string, extra: Record<string, unknown> = {}) {
  return {
    key: { network: 'vpcnet', containerId: `c-${pod}`, ifName: 'eth0' },
    pod: { namespace: ns, name: pod, uid: `uid-${pod}` },
    ip,
    eniId,
    phase: 'ready',
    ...extra,
  };
}

function eni(
  eniId: string,
  instanceId: string | undefined,
  secondaryIps: string[],
  extra: Partial<Ec2Eni> = {},
): Ec2Eni {
  return {
    eniId,
    subnetId: 'subnet-a',
    status: instanceId === undefined ? 'available' : 'in-use',
    interfaceType: 'interface',
    ...(instanceId === undefined ? {} : { instanceId, deviceIndex: 0 }),
    primaryIp: `10.0.9.${eniId.length}`,
    secondaryIps,
    ipv4Prefixes: [],
    description: '',
    tags: {},
    ...extra,
  };
}

function pod(ns: string, name: string, node: string, extra: Partial<PodView> = {}): PodView {
  return {
    namespace: ns,
    name,
    uid: `uid-${name}`,
    node,
    hostNetwork: false,
    statusIps: [],
    annotatedIps: [],
    podEni: [],
    ...extra,
  };
}

const poolEni = (eniId: string, addresses: Record<string, unknown>) => ({ eniId, addresses });

/** node1 (i-1) with pod web on eni-1 at 10.0.0.10, its pool holding .10 and .11: all in order. */
function healthy(): ClusterRead {
  return {
    agents: [
      agent('node1', 'i-1', {
        enis: [poolEni('eni-1', { '10.0.0.10': { kind: 'assigned' }, '10.0.0.11': { kind: 'free' } })],
        attachments: [record('default', 'web', '10.0.0.10', 'eni-1')],
      }),
    ],
    pods: [pod('default', 'web', 'node1', { statusIps: ['10.0.0.10'] })],
    enis: [eni('eni-1', 'i-1', ['10.0.0.10', '10.0.0.11'])],
    subnets: [SUBNET],
  };
}

const keys = (r: ClusterRead) =>
  findCandidates(r)
    .map((f) => f.key)
    .sort();

test('a cluster in order has no finding', () => {
  assert.deepEqual(keys(healthy()), []);
});

test('an address on the ENI that neither pool nor record has is unowned; so is a /28 none of whose addresses the pool has', () => {
  const r = healthy();
  const read = {
    ...r,
    enis: [eni('eni-1', 'i-1', ['10.0.0.10', '10.0.0.11', '10.0.0.12'], { ipv4Prefixes: ['10.0.1.0/28'] })],
  };
  assert.deepEqual(keys(read), ['unowned-address eni-1 10.0.0.12', 'unowned-address eni-1 10.0.1.0/28']);
});

test('a record whose pod is gone, or came back with another UID; not while the node has spooled DELs', () => {
  const r = healthy();
  assert.deepEqual(keys({ ...r, pods: [] }), ['record-pod-gone node1 c-web eth0']);
  assert.deepEqual(
    keys({ ...r, pods: [pod('default', 'web', 'node1', { uid: 'uid-new', statusIps: ['10.0.0.10'] })] }),
    ['record-pod-gone node1 c-web eth0'],
  );
  const busy = {
    ...r,
    pods: [],
    agents: [{ node: 'node1', state: { ...r.agents[0]!.state!, spoolDepth: 2 } }],
  };
  assert.deepEqual(keys(busy), []);
});

test('an address moved to another node’s ENI is one finding on two nodes, not also missing and unowned', () => {
  const r = healthy();
  const read: ClusterRead = {
    ...r,
    agents: [...r.agents, agent('node2', 'i-2', { enis: [poolEni('eni-2', {})] })],
    enis: [eni('eni-1', 'i-1', ['10.0.0.11']), eni('eni-2', 'i-2', ['10.0.0.10'])],
  };
  const found = findCandidates(read);
  assert.deepEqual(
    found.map((f) => f.key),
    ['address-on-two-nodes 10.0.0.10'],
  );
  assert.equal(found[0]?.severity, 'critical');
  assert.deepEqual(found[0]?.enis, ['eni-1', 'eni-2'], 'both ENIs are read again to confirm it');
});

test('a held address EC2 no longer assigns anywhere is missing', () => {
  const r = healthy();
  assert.deepEqual(keys({ ...r, enis: [eni('eni-1', 'i-1', ['10.0.0.11'])] }), [
    'held-address-missing node1 10.0.0.10',
  ]);
});

test('the API’s pod IPs against the ledger: status and the pod-ips annotation; host-network pods are left alone', () => {
  const r = healthy();
  assert.deepEqual(
    keys({
      ...r,
      pods: [pod('default', 'web', 'node1', { statusIps: ['10.0.0.99'], annotatedIps: ['10.0.0.98'] })],
    }),
    ['pod-ip-mismatch default/web status', 'pod-ip-mismatch default/web vpc.amazonaws.com/pod-ips'],
  );
  assert.deepEqual(
    keys({
      ...r,
      pods: [...r.pods, pod('kube-system', 'proxy', 'node1', { hostNetwork: true, statusIps: ['10.0.9.5'] })],
    }),
    [],
  );
});

test('a detached ENI of vpcnet’s is found, unless an agent is on its way with it; one not vpcnet’s is not', () => {
  const r = healthy();
  const ours = eni('eni-9', undefined, [], { tags: { 'vpcnet.io/created-by': 'vpcnet' } });
  const theirs = eni('eni-8', undefined, []);
  assert.deepEqual(keys({ ...r, enis: [...r.enis, ours, theirs] }), ['detached-eni eni-9']);
  const pending = {
    ...r,
    agents: [
      agent('node1', 'i-1', {
        enis: r.agents[0]!.state!.enis.map((e) =>
          poolEni(e.eniId, { '10.0.0.10': { kind: 'assigned' }, '10.0.0.11': { kind: 'free' } }),
        ),
        attachments: [record('default', 'web', '10.0.0.10', 'eni-1')],
        pool: { pendingEnis: [{ eniId: 'eni-9', step: 'created' }] },
      }),
    ],
    enis: [...r.enis, ours],
  };
  assert.deepEqual(keys(pending), []);
});

test('a detached vpcnet ENI tagged for another cluster of the VPC is not this cluster’s to report', () => {
  const r = healthy();
  const tagged = (name: string, cluster: string) =>
    eni(name, undefined, [], {
      tags: { 'vpcnet.io/created-by': 'vpcnet', 'cluster.k8s.amazonaws.com/name': cluster },
    });
  const enis = [...r.enis, tagged('eni-p', 'prod'), tagged('eni-s', 'staging')];
  assert.deepEqual(keys({ ...r, enis, clusterName: 'prod' }), ['detached-eni eni-p']);
  assert.deepEqual(keys({ ...r, enis }), [], 'a cluster without a name cannot tell either is its own');
});

test('an ENI serving pods from a subnet tagged to drain, and a branch ENI annotation EC2 disagrees with', () => {
  const r = healthy();
  const drained = { ...r, subnets: [{ ...SUBNET, tags: { 'kubernetes.io/role/cni': '0' } }] };
  assert.deepEqual(keys(drained), ['draining-subnet-eni eni-1']);
  const branch = {
    ...r,
    pods: [...r.pods, pod('default', 'sg', 'node1', { podEni: [{ eniId: 'eni-b', ip: '10.0.0.50' }] })],
    enis: [
      ...r.enis,
      eni('eni-b', undefined, [], { status: 'in-use', interfaceType: 'branch', primaryIp: '10.0.0.51' }),
    ],
  };
  assert.deepEqual(keys(branch), ['branch-mismatch default/sg eni-b']);
});

test('an agent that cannot be read is one finding, and its node’s addresses are not called unowned', () => {
  const r = healthy();
  const down: ClusterRead = { ...r, agents: [{ node: 'node1', error: 'connection refused' }], pods: [] };
  assert.deepEqual(keys(down), ['agent-unreachable node1']);
});

test('a 1,000-node cluster (30,000 pods, 3,000 ENIs, one address moved and one prefix unused) is judged in seconds: linear, not quadratic', () => {
  const agents: ClusterRead['agents'][number][] = [];
  const pods: PodView[] = [];
  const enis: Ec2Eni[] = [];
  const ipOf = (n: number, e: number, k: number) => `10.${(n >> 8) + 16 * e}.${n & 255}.${10 + k}`;
  for (let n = 0; n < 1000; n++) {
    const poolEnis = [];
    const records = [];
    for (let e = 0; e < 3; e++) {
      const ips = Array.from({ length: 10 }, (_, k) => ipOf(n, e, k));
      enis.push(eni(`eni-${n}-${e}`, `i-${n}`, ips, { primaryIp: `10.${(n >> 8) + 16 * e}.${n & 255}.5` }));
      poolEnis.push(
        poolEni(`eni-${n}-${e}`, Object.fromEntries(ips.map((ip) => [ip, { kind: 'assigned' }]))),
      );
      for (const [k, ip] of ips.entries()) {
        records.push(record('default', `p-${n}-${e}-${k}`, ip, `eni-${n}-${e}`));
        pods.push(pod('default', `p-${n}-${e}-${k}`, `node${n}`, { statusIps: [ip] }));
      }
    }
    agents.push(agent(`node${n}`, `i-${n}`, { enis: poolEnis, attachments: records }));
  }
  // Node 7's first address is also on node 8's first ENI; node 9's first ENI has a /28 nobody uses.
  const moved = ipOf(7, 0, 0);
  const e8 = enis.findIndex((e) => e.eniId === 'eni-8-0');
  enis[e8] = { ...enis[e8]!, secondaryIps: [...enis[e8]!.secondaryIps, moved] };
  const e9 = enis.findIndex((e) => e.eniId === 'eni-9-0');
  enis[e9] = { ...enis[e9]!, ipv4Prefixes: ['10.0.9.128/28'] };
  const started = performance.now();
  const found = findCandidates({ agents, pods, enis, subnets: [SUBNET] });
  const ms = performance.now() - started;
  assert.deepEqual(
    found.map((f) => f.key),
    [`address-on-two-nodes ${moved}`, 'unowned-address eni-9-0 10.0.9.128/28'],
  );
  // Linear in the cluster: a quadratic pass (every ENI per held address) takes tens of seconds here.
  assert.ok(ms < 3000, `${ms.toFixed(0)} ms`);
});
