// The first hour of a new user, as a table of command lines with the exit code and the first line
// each prints: every binary's --version, usage errors as one line and exit 2, the node commands
// reaching a lab's node with --lab, `lab cni` running a pod's whole chain, `lab up` refusing what
// it cannot serve, `lab down` saying what it removed. One pod-ENI lab (m5.large), so that status
// shows the trunk and its branch ENIs.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { type LabDesc, labDown, labUp, repoRoot, uniqueLabName, waitForTrunk } from '../lab-fixture.ts';

const bin = (name: string) => join(repoRoot, 'bin', name);
const ctlPath = bin('vpcnetctl');

interface Row {
  readonly argv: readonly string[];
  /** The exit codes allowed (status may be degraded by a failure of the lab's own making). */
  readonly code: number | readonly number[];
  /** The first line printed, on stdout unless `stderr`. */
  readonly first: RegExp;
  readonly stderr?: boolean;
}

async function check(row: Row): Promise<string> {
  const r = await runProcess([process.execPath, ctlPath, ...row.argv]);
  const codes = typeof row.code === 'number' ? [row.code] : row.code;
  const what = `vpcnetctl ${row.argv.join(' ')}`;
  assert.ok(
    codes.includes(r.code),
    `${what}: exit ${r.code}, expected ${codes.join(' or ')}\n${r.stdout}${r.stderr}`,
  );
  const text = row.stderr === true ? r.stderr : r.stdout;
  const first = text.split('\n')[0] ?? '';
  assert.match(first, row.first, `${what}: first line of ${row.stderr ? 'stderr' : 'stdout'}\n${text}`);
  return r.stdout;
}

test('every binary answers --version with vpcnet’s version; vpcnetd refuses an argument before it starts', async () => {
  for (const [argv, first] of [
    [[bin('vpcnet'), '--version'], /^vpcnet CNI plugin 0\.1\.0 \(CNI spec 0\.3\.0, .*1\.1\.0\)$/],
    [[process.execPath, bin('vpcnet-js'), '--version'], /^vpcnet CNI plugin 0\.1\.0 /],
    [[process.execPath, bin('vpcnetd'), '--version'], /^vpcnetd 0\.1\.0$/],
    [[process.execPath, ctlPath, '--version'], /^vpcnetctl 0\.1\.0$/],
    [[bin('vpcnet-netlink'), '--version'], /^vpcnet-netlink 0\.1\.0$/],
  ] as const) {
    const r = await runProcess([...argv]);
    assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stdout.split('\n')[0] ?? '', first);
  }
  const started = Date.now();
  const agent = await runProcess([process.execPath, bin('vpcnetd'), '--bogus'], {
    env: { PATH: process.env.PATH ?? '', VPCNET_AGENT_SOCKET: '/nonexistent/never.sock' },
  });
  assert.equal(agent.code, 2);
  assert.match(agent.stderr, /^vpcnetd: unknown argument '--bogus'/);
  assert.equal(agent.stdout, '', 'nothing started, nothing logged');
  assert.ok(Date.now() - started < 5000, 'refused at once, before any start-up work');
  const plugin = await runProcess([bin('vpcnet'), 'ADD']);
  assert.equal(plugin.code, 2);
  assert.match(plugin.stderr, /^vpcnet: unknown argument 'ADD'/);
});

describe('vpcnetctl against a lab: the first hour', () => {
  const name = uniqueLabName('fh');
  const bundle = `/tmp/${name}-bundle.tar.gz`;
  let lab: LabDesc;

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--instance-type', 'm5.large', '--pod-eni']);
    await waitForTrunk(name, lab.nodes[0]!.name);
  });
  after(async () => {
    await labDown(name);
    await rm(bundle, { force: true });
  });

  const L = () => name;
  const rows: readonly (readonly [string, () => Row])[] = [
    ['no command', () => ({ argv: [], code: 2, first: /^Usage: vpcnetctl <command>/, stderr: true })],
    [
      'an unknown command',
      () => ({ argv: ['bogus'], code: 2, first: /^vpcnetctl: unknown command 'bogus'$/, stderr: true }),
    ],
    [
      'an unknown option: one line, then the pointer to --help',
      () => ({
        argv: ['status', '--bogus'],
        code: 2,
        first: /^vpcnetctl status: Unknown option '--bogus'/,
        stderr: true,
      }),
    ],
    [
      'install without its dirs',
      () => ({
        argv: ['install'],
        code: 2,
        first: /^vpcnetctl install: install needs --cni-bin-dir and --cni-conf-dir$/,
        stderr: true,
      }),
    ],
    [
      'state with no agent: down, as status',
      () => ({
        argv: ['state', '--agent-socket', '/nonexistent/a.sock'],
        code: 3,
        first: /^vpcnetctl state: no agent answers/,
        stderr: true,
      }),
    ],
    [
      'status with no agent',
      () => ({
        argv: ['status', '--agent-socket', '/nonexistent/a.sock'],
        code: 3,
        first: /^vpcnet agent: DOWN$/,
      }),
    ],
    [
      'a lab that is not up',
      () => ({
        argv: ['status', '--lab', 'nolabfh0'],
        code: 2,
        first: /^vpcnetctl status: lab nolabfh0 is not up/,
        stderr: true,
      }),
    ],
    [
      '--lab with --agent-socket',
      () => ({
        argv: ['pods', '--lab', L(), '--agent-socket', '/x'],
        code: 2,
        first: /--agent-socket does not go with --lab/,
        stderr: true,
      }),
    ],
    [
      'a node the lab lacks',
      () => ({
        argv: ['health', '--lab', L(), '--node', '2'],
        code: 2,
        first: /has no node "2" \(its nodes: node1\)/,
        stderr: true,
      }),
    ],
    [
      'lab with no command',
      () => ({ argv: ['lab'], code: 2, first: /^Usage: vpcnetctl lab <command>/, stderr: true }),
    ],
    [
      'an unknown lab command',
      () => ({
        argv: ['lab', 'bogus'],
        code: 2,
        first: /^vpcnetctl lab: unknown command "bogus"$/,
        stderr: true,
      }),
    ],
    [
      'lab up with a type the lab does not know',
      () => ({
        argv: ['lab', 'up', '--name', 'fhx', '--instance-type', 't9.huge'],
        code: 2,
        first: /^vpcnetctl lab up: the lab has no instance type "t9\.huge"; it knows t3\.medium/,
        stderr: true,
      }),
    ],
    [
      'lab up --pod-eni on a type without trunking',
      () => ({
        argv: ['lab', 'up', '--name', 'fhx', '--pod-eni'],
        code: 2,
        first: /^vpcnetctl lab up: t3\.medium has no trunking, .*types with trunking: m5\.large/,
        stderr: true,
      }),
    ],
    [
      'lab pod',
      () => ({
        argv: ['lab', 'pod', '--name', L(), '--node', 'node1', '--namespace', 'default', '--pod', 'web-0'],
        code: 0,
        first: /"name":"web-0"/,
      }),
    ],
    [
      'lab pod of a pod registered already',
      () => ({
        argv: ['lab', 'pod', '--name', L(), '--node', 'node1', '--namespace', 'default', '--pod', 'web-0'],
        code: 1,
        first:
          /^vpcnetctl lab pod: pod default\/web-0 is registered already; remove it first: vpcnetctl lab pod --name \S+ --delete/,
        stderr: true,
      }),
    ],
    [
      'lab pod with security groups',
      () => ({
        argv: [
          'lab',
          'pod',
          '--name',
          L(),
          '--node',
          'node1',
          '--namespace',
          'default',
          '--pod',
          'sg-0',
          '--security-groups',
          'sg-0a1b2c3d',
        ],
        code: 0,
        first: /vpc\.amazonaws\.com\/pod-eni/,
      }),
    ],
    [
      'lab cni ADD',
      () => ({
        argv: ['lab', 'cni', 'ADD', '--name', L(), '--pod', 'default/web-0'],
        code: 0,
        first:
          /^ADD pod default\/web-0 on node1: 10\.0\.\d+\.\d+ \(sandbox labcni\w+, netns \S+-pod-default-web-0\)$/,
      }),
    ],
    [
      'lab cni ADD of the pod with security groups',
      () => ({
        argv: ['lab', 'cni', 'ADD', '--name', L(), '--pod', 'default/sg-0'],
        code: 0,
        first: /^ADD pod default\/sg-0 on node1: 10\.0\.\d+\.\d+ /,
      }),
    ],
    [
      'lab cni CHECK',
      () => ({
        argv: ['lab', 'cni', 'CHECK', '--name', L(), '--pod', 'default/web-0'],
        code: 0,
        first: /^CHECK pod default\/web-0 on node1: done/,
      }),
    ],
    [
      'lab cni ADD of a pod with a sandbox',
      () => ({
        argv: ['lab', 'cni', 'ADD', '--name', L(), '--pod', 'default/web-0'],
        code: 2,
        first: /has a sandbox already/,
        stderr: true,
      }),
    ],
    [
      'lab cni of an unregistered pod',
      () => ({
        argv: ['lab', 'cni', 'ADD', '--name', L(), '--pod', 'default/ghost'],
        code: 2,
        first: /pod default\/ghost is not registered in lab/,
        stderr: true,
      }),
    ],
    [
      'explain --lab of the pod lab cni added',
      () => ({ argv: ['explain', '--lab', L(), 'default/sg-0'], code: 0, first: /^default\/sg-0$/ }),
    ],
    [
      'status --lab',
      () => ({
        argv: ['status', '--lab', L()],
        code: [0, 1],
        first: /^Node i-\w+ \(m5\.large\): (HEALTHY|DEGRADED)$/,
      }),
    ],
    [
      'pods --lab --node 1',
      () => ({
        argv: ['pods', '--lab', L(), '--node', '1'],
        code: 0,
        first: /^POD\s+CONTAINER\s+IF\s+ADDRESS\s+ENI/,
      }),
    ],
    ['state --json --lab', () => ({ argv: ['state', '--json', '--lab', L()], code: 0, first: /^\{$/ })],
    ['health --lab: quiet', () => ({ argv: ['health', '--lab', L()], code: 0, first: /^$/ })],
    [
      'support-bundle --lab',
      () => ({ argv: ['support-bundle', '--lab', L(), '-o', bundle], code: 0, first: /\.tar\.gz \(\d/ }),
    ],
    [
      'lab cni DEL',
      () => ({
        argv: ['lab', 'cni', 'DEL', '--name', L(), '--pod', 'default/web-0'],
        code: 0,
        first: /^DEL pod default\/web-0 on node1: done/,
      }),
    ],
    [
      'lab cni DEL again',
      () => ({
        argv: ['lab', 'cni', 'DEL', '--name', L(), '--pod', 'default/web-0'],
        code: 2,
        first: /has no sandbox/,
        stderr: true,
      }),
    ],
    [
      'lab down of a lab that is not there',
      () => ({
        argv: ['lab', 'down', '--name', 'nolabfh0'],
        code: 0,
        first: /^lab nolabfh0: nothing to remove$/,
      }),
    ],
  ];
  for (const [what, row] of rows) test(what, async () => void (await check(row())));

  test('main help names every lab command, and every node command takes --lab', async () => {
    const help = await check({ argv: ['--help'], code: 0, first: /^Usage: vpcnetctl <command>/ });
    for (const c of ['lab up', 'lab pod', 'lab cni', 'lab subnet', 'lab eni-config', 'lab eni', 'demo'])
      assert.match(help, new RegExp(`^  ${c}\\s`, 'm'));
    for (const c of ['status', 'pods', 'explain', 'state', 'health', 'support-bundle']) {
      const h = await check({ argv: [c, '--help'], code: 0, first: new RegExp(`^Usage: vpcnetctl ${c}`) });
      assert.match(h, /--lab NAME/);
    }
  });

  test('status in a pod-ENI lab shows the trunk and each branch ENI with its VLAN and pod', async () => {
    const out = await check({ argv: ['status', '--lab', L()], code: [0, 1], first: /^Node / });
    assert.match(out, /^Attachments: 1, 1 of them on branch ENIs \(not in the pool\)/m);
    assert.match(out, /^Trunk ENI: eni-\w+ \(link eth\d\), 1 branch ENI\(s\)$/m);
    assert.match(out, /^eni-\w+\s+1\s+10\.0\.\d+\.\d+\s+default\/sg-0$/m);
  });

  test('the support bundle of a lab node dumps the node’s namespace, not this one', async () => {
    const listing = await runProcess(['tar', '-xzOf', bundle, '--wildcards', '*/node/ip-link.json']);
    assert.equal(listing.code, 0, listing.stderr);
    const links = (JSON.parse(listing.stdout) as { ifname: string }[]).map((l) => l.ifname);
    assert.ok(links.includes('eth0') && links.includes('eth1'), `the lab node's links: ${links.join(' ')}`);
    const errors = await runProcess(['tar', '-xzOf', bundle, '--wildcards', '*/errors.txt']);
    assert.equal(errors.stdout, 'every collector succeeded\n');
  });

  test('lab down says what it removed', async () => {
    await check({
      argv: ['lab', 'cni', 'DEL', '--name', L(), '--pod', 'default/sg-0'],
      code: 0,
      first: /^DEL /,
    });
    const out = await check({ argv: ['lab', 'down', '--name', L()], code: 0, first: /^lab \S+ removed: / });
    assert.match(
      out,
      /\d+ process\(es\) stopped, \d+ network namespace\(s\) deleted, \/run\/vpcnet-lab\/\S+ removed/,
    );
  });
});
