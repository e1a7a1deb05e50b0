// The checks on crafted states: a consistent node passes, and each planted fault is named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkAgreement,
  checkClean,
  checkLiveSandboxes,
  checkSingleHolders,
  type LiveSandbox,
} from './checks.ts';
import type { AgentAttachment, AgentView, Ec2View, KernelView } from './views.ts';

const INSTANCE = 'i-0123';
const VETH = 'vpc';

function attachment(containerId: string, ip: string, veth: string): AgentAttachment {
  return {
    keyString: `vpcnet/${containerId}/eth0`,
    containerId,
    ip,
    eniId: 'eni-1',
    binding: undefined,
    resources: [
      { kind: 'vpcAddress', ip, eniId: 'eni-1' },
      { kind: 'veth', hostName: veth },
      { kind: 'route', side: 'node', dst: `${ip}/32`, dev: veth, table: 254 },
      { kind: 'rule', priority: 512, to: `${ip}/32`, table: 254 },
    ],
  };
}

function healthy(): { agent: AgentView; kernel: KernelView; ec2: Ec2View; live: LiveSandbox[] } {
  const agent: AgentView = {
    pid: 10,
    instanceId: INSTANCE,
    attachments: [attachment('c1', '10.0.0.5', 'vpcaaa'), attachment('c2', '10.0.0.6', 'vpcbbb')],
    bindings: [],
    pool: [
      {
        eniId: 'eni-1',
        primaryIp: '10.0.0.4',
        deviceNumber: 0,
        routeTable: 254,
        addresses: new Map([
          ['10.0.0.5', 'assigned'],
          ['10.0.0.6', 'assigned'],
          ['10.0.0.7', 'free'],
        ]),
      },
      {
        eniId: 'eni-2',
        primaryIp: '10.0.0.10',
        deviceNumber: 1,
        routeTable: 2,
        addresses: new Map([['10.0.0.11', 'free']]),
      },
    ],
  };
  const kernel: KernelView = {
    links: ['lo', 'eth0', 'eth1', 'vpcaaa', 'vpcbbb'],
    routes: [
      { dst: 'default', dev: 'eth0', table: 254 },
      { dst: 'default', dev: 'eth1', table: 2 },
      { dst: '10.0.0.5', dev: 'vpcaaa', table: 254 },
      { dst: '10.0.0.6', dev: 'vpcbbb', table: 254 },
    ],
    rules: [
      { priority: 0, from: undefined, to: undefined, table: 255 },
      { priority: 512, from: undefined, to: '10.0.0.5/32', table: 254 },
      { priority: 512, from: undefined, to: '10.0.0.6/32', table: 254 },
      { priority: 1536, from: '10.0.0.10/32', to: undefined, table: 2 },
      { priority: 32766, from: undefined, to: undefined, table: 254 },
    ],
  };
  const eni = (eniId: string, primaryIp: string, secondaryIps: string[]) => ({
    eniId,
    primaryIp,
    secondaryIps,
    instanceId: INSTANCE as string | undefined,
    interfaceType: 'interface',
    tags: {},
    description: '',
  });
  const ec2: Ec2View = {
    enis: [
      eni('eni-1', '10.0.0.4', ['10.0.0.5', '10.0.0.6', '10.0.0.7']),
      eni('eni-2', '10.0.0.10', ['10.0.0.11']),
    ],
    calls: {},
  };
  const live: LiveSandbox[] = [
    { pod: 'p1', containerId: 'c1', netnsName: 'st-p1', ip: '10.0.0.5', addresses: ['10.0.0.5'] },
    { pod: 'p2', containerId: 'c2', netnsName: 'st-p2', ip: '10.0.0.6', addresses: ['10.0.0.6'] },
  ];
  return { agent, kernel, ec2, live };
}

test('a consistent node passes every check but the leak check, which names what is still there', () => {
  const { agent, kernel, ec2, live } = healthy();
  assert.deepEqual(checkLiveSandboxes(live, agent, kernel), []);
  assert.deepEqual(checkSingleHolders(agent, kernel, ec2, VETH), []);
  assert.deepEqual(checkAgreement(agent, kernel, ec2, VETH), []);
  assert.equal(checkClean(agent, kernel, ec2, new Set(), VETH).length, 2 + 2); // two attachments, two assigned addresses
});

test('a live sandbox whose route, rule, veth or address went missing is named', () => {
  const { agent, kernel, live } = healthy();
  const broken: KernelView = {
    links: kernel.links.filter((l) => l !== 'vpcbbb'),
    routes: kernel.routes.filter((r) => r.dst !== '10.0.0.5'),
    rules: kernel.rules.filter((r) => r.to !== '10.0.0.6/32'),
  };
  const emptied = live.map((s) => (s.pod === 'p1' ? { ...s, addresses: [] } : s));
  const found = checkLiveSandboxes(emptied, agent, broken);
  assert.ok(
    found.some((v) => /c1.*lacks its address 10\.0\.0\.5/.test(v)),
    found.join('\n'),
  );
  assert.ok(found.some((v) => /c1.*route 10\.0\.0\.5\/32 dev vpcaaa .*missing/.test(v)));
  assert.ok(found.some((v) => /c2.*host veth vpcbbb is missing/.test(v)));
  assert.ok(found.some((v) => /c2.*rule 512: from all to 10\.0\.0\.6\/32 .*missing/.test(v)));
});

test('a running sandbox the ledger forgot, or whose address the ledger changed, is named', () => {
  const { agent, kernel, live } = healthy();
  const forgot = { ...agent, attachments: agent.attachments.filter((a) => a.containerId !== 'c2') };
  assert.match(
    checkLiveSandboxes(live, forgot, kernel).join('\n'),
    /c2 of pod p2 is running but the agent's ledger has no attachment/,
  );
  const moved = { ...agent, attachments: [attachment('c1', '10.0.0.7', 'vpcaaa'), agent.attachments[1]!] };
  assert.match(
    checkLiveSandboxes(live, moved, kernel).join('\n'),
    /returned 10\.0\.0\.5, the ledger says 10\.0\.0\.7/,
  );
});

test('an address held twice is named, in the ledger, the kernel and EC2', () => {
  const { agent, kernel, ec2 } = healthy();
  const twice = { ...agent, attachments: [...agent.attachments, attachment('c3', '10.0.0.5', 'vpcccc')] };
  assert.match(
    checkSingleHolders(twice, kernel, ec2, VETH).join('\n'),
    /ledger: 10\.0\.0\.5 is held by vpcnet\/c1\/eth0 and vpcnet\/c3\/eth0/,
  );
  const routedTwice = {
    ...kernel,
    routes: [...kernel.routes, { dst: '10.0.0.5', dev: 'vpcccc', table: 254 }],
  };
  assert.match(
    checkSingleHolders(agent, routedTwice, ec2, VETH).join('\n'),
    /kernel: 10\.0\.0\.5 table 254 is routed to vpcaaa and vpcccc/,
  );
  const ec2Twice = {
    ...ec2,
    enis: ec2.enis.map((e) => (e.eniId === 'eni-2' ? { ...e, secondaryIps: ['10.0.0.11', '10.0.0.6'] } : e)),
  };
  assert.match(
    checkSingleHolders(agent, kernel, ec2Twice, VETH).join('\n'),
    /EC2: 10\.0\.0\.6 is assigned to eni-1 and eni-2/,
  );
});

test('two sandboxes of one pod with security groups share its branch address without a violation', () => {
  const { agent, kernel, ec2 } = healthy();
  const branch = (c: string) => ({
    ...attachment(c, '10.0.0.40', `vpc${c}`),
    eniId: undefined,
    binding: 'uid-1/eni-b',
  });
  const shared = { ...agent, attachments: [...agent.attachments, branch('s1'), branch('s2')] };
  assert.deepEqual(checkSingleHolders(shared, kernel, ec2, VETH), []);
});

test('ledger, kernel and EC2 disagreeing is named: an address EC2 lost, an ENI the pool forgot, a stray rule', () => {
  const { agent, kernel, ec2 } = healthy();
  const lost = {
    ...ec2,
    enis: ec2.enis.map((e) => (e.eniId === 'eni-1' ? { ...e, secondaryIps: ['10.0.0.6', '10.0.0.7'] } : e)),
  };
  const found = checkAgreement(agent, kernel, lost, VETH).join('\n');
  assert.match(found, /attachment vpcnet\/c1\/eth0: EC2 has no 10\.0\.0\.5 on eni-1/);
  assert.match(found, /pool: 10\.0\.0\.5 \(assigned\) is not assigned to eni-1 in EC2/);
  const forgot = { ...agent, pool: agent.pool.filter((p) => p.eniId !== 'eni-2') };
  assert.match(
    checkAgreement(forgot, kernel, ec2, VETH).join('\n'),
    /ENI eni-2 is attached to i-0123 but not in the agent's pool/,
  );
  const stray = {
    ...kernel,
    rules: [...kernel.rules, { priority: 512, from: undefined, to: '10.0.0.9/32', table: 254 }],
  };
  assert.match(
    checkAgreement(agent, stray, ec2, VETH).join('\n'),
    /rule 512: from all to 10\.0\.0\.9\/32 lookup 254 is owned by no attachment/,
  );
});

test("NodePort support's fwmark rule is the node's, not an unowned one; the same priority without a mark is", () => {
  const { agent, kernel, ec2 } = healthy();
  const rule = { priority: 1024, from: undefined, to: undefined, table: 254 };
  const withMark = { ...kernel, rules: [...kernel.rules, { ...rule, fwmark: '0x80' }] };
  assert.deepEqual(checkAgreement(agent, withMark, ec2, VETH), []);
  const withoutMark = { ...kernel, rules: [...kernel.rules, rule] };
  assert.match(
    checkAgreement(agent, withoutMark, ec2, VETH).join('\n'),
    /rule 1024: .* is owned by no attachment/,
  );
});

test('after all pods are gone, a leaked address, a left veth and an unattached ENI of the node are named', () => {
  const { agent, kernel, ec2 } = healthy();
  const emptyPool = agent.pool.map((p) => ({
    ...p,
    addresses: new Map([...p.addresses].filter(([ip]) => ip !== '10.0.0.5' && ip !== '10.0.0.6')),
  }));
  const emptied: AgentView = { ...agent, attachments: [], pool: emptyPool };
  const cleanKernel: KernelView = {
    links: ['lo', 'eth0', 'eth1'],
    routes: kernel.routes.filter((r) => !r.dev.startsWith(VETH)),
    rules: kernel.rules.filter((r) => r.priority !== 512),
  };
  const released = {
    ...ec2,
    enis: ec2.enis.map((e) => (e.eniId === 'eni-1' ? { ...e, secondaryIps: ['10.0.0.7'] } : e)),
  };
  assert.deepEqual(checkClean(emptied, cleanKernel, released, new Set(['10.0.0.5', '10.0.0.6']), VETH), []);
  const leaked = checkClean(
    emptied,
    { ...cleanKernel, links: [...cleanKernel.links, 'vpcaaa'] },
    ec2,
    new Set(['10.0.0.5']),
    VETH,
  ).join('\n');
  assert.match(leaked, /10\.0\.0\.5 is still assigned to the node in EC2 but not in the warm pool/);
  assert.match(leaked, /link vpcaaa is owned by no attachment/);
  const orphan = {
    ...released,
    enis: [
      ...released.enis,
      {
        ...released.enis[1]!,
        eniId: 'eni-3',
        instanceId: undefined,
        description: `vpcnet: node ${INSTANCE}`,
      },
    ],
  };
  assert.match(
    checkClean(emptied, cleanKernel, orphan, new Set(), VETH).join('\n'),
    /ENI eni-3 of this node is left unattached/,
  );
});
