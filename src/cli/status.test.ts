// status, pods and health against a socket answering recorded states.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { runCli } from './main.ts';
import { captureCli } from './testing/cli-capture.ts';
import { type FakeAgentAnswers, recordedState, serveFakeAgent } from './testing/fake-agent-socket.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function withAgent<T>(answers: FakeAgentAnswers, run: (socket: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnetctl-'));
  dirs.push(dir);
  const socket = join(dir, 'agent.sock');
  const agent = await serveFakeAgent(socket, answers);
  try {
    return await run(socket);
  } finally {
    await agent.close();
  }
}

const ESC = '\u001b';
const noSpool = ['--del-spool-dir', '/nonexistent/spool'];

test('status of a healthy node exits 0 and shows pool, ENIs with their assigned addresses, attachments', async () => {
  const state = await recordedState('healthy-state');
  await withAgent({ healthz: 200, state }, async (socket) => {
    const cli = captureCli();
    assert.equal(await runCli(['status', '--agent-socket', socket, ...noSpool], cli), 0);
    const text = cli.stdout();
    assert.match(text, /^Node i-0fake \(t3\.small\): HEALTHY$/m);
    assert.match(text, /^Pool: 11 addresses: 2 assigned, 0 cooling, 9 free; can grow$/m);
    assert.match(text, /^Attachments: 2/m);
    assert.match(
      text,
      /^eni-primary\s+0\s+10\.0\.0\.10\s+11\s+2\s+0\s+10\.0\.0\.11 \(default\/web-0\), 10\.0\.0\.12 \(default\/db-0\)$/m,
    );
    assert.doesNotMatch(text, /Warnings:/);
    assert.ok(!text.includes(ESC), 'no colour when stdout is not a terminal');
  });
});

test('status of a degraded node exits 1 and lists its warnings', async () => {
  const state = await recordedState('degraded-state');
  await withAgent({ healthz: 200, state }, async (socket) => {
    const cli = captureCli();
    assert.equal(await runCli(['status', '--agent-socket', socket, ...noSpool], cli), 1);
    assert.match(cli.stdout(), /: DEGRADED$/m);
    assert.match(cli.stdout(), /blocked: AttachmentLimitExceeded/);
    assert.match(cli.stdout(), /^Warnings:\n {2}! address pool cannot grow/m);
  });
});

test('status colours on a terminal, but not with NO_COLOR and never in --json', async () => {
  const state = await recordedState('degraded-state');
  await withAgent({ healthz: 200, state }, async (socket) => {
    const tty = captureCli({ tty: true });
    await runCli(['status', '--agent-socket', socket, ...noSpool], tty);
    assert.ok(tty.stdout().includes(`${ESC}[33mDEGRADED${ESC}[0m`));
    const noColor = captureCli({ tty: true, env: { NO_COLOR: '1' } });
    await runCli(['status', '--agent-socket', socket, ...noSpool], noColor);
    assert.ok(!noColor.stdout().includes(ESC));
    const json = captureCli({ tty: true });
    assert.equal(await runCli(['status', '--json', '--agent-socket', socket, ...noSpool], json), 1);
    assert.ok(!json.stdout().includes(ESC));
    const doc = JSON.parse(json.stdout()) as {
      verdict: string;
      findings: { severity: string }[];
      node: { pool: { total: number } };
    };
    assert.equal(doc.verdict, 'degraded');
    assert.equal(doc.node.pool.total, 11);
    assert.ok(doc.findings.some((f) => f.severity === 'warning'));
  });
});

test('status of an agent that answers but does not serve yet is down (exit 3)', async () => {
  const state = await recordedState('healthy-state');
  await withAgent({ healthz: 503, state }, async (socket) => {
    const cli = captureCli();
    assert.equal(await runCli(['status', '--agent-socket', socket, ...noSpool], cli), 3);
    assert.match(cli.stdout(), /: DOWN$/m);
    assert.match(cli.stdout(), /does not serve CNI requests yet/);
  });
});

test('status with no agent on the socket is down (exit 3) and says where it looked', async () => {
  const cli = captureCli();
  assert.equal(await runCli(['status', '--agent-socket', '/nonexistent/agent.sock'], cli), 3);
  assert.match(cli.stdout(), /DOWN\n {2}no agent answers on \/nonexistent\/agent\.sock/);
});

test('pods prints one aligned row per attachment, sorted by pod', async () => {
  const state = await recordedState('healthy-state');
  await withAgent({ healthz: 200, state }, async (socket) => {
    const cli = captureCli();
    assert.equal(await runCli(['pods', '--agent-socket', socket], cli), 0);
    const lines = cli.stdout().trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^POD\s+CONTAINER\s+IF\s+ADDRESS\s+ENI\s+HOST VETH\s+PHASE\s+AGE$/);
    assert.equal(lines.length, 3);
    assert.match(
      lines[1] ?? '',
      /^default\/db-0\s+c2bbbbbbbbbb\s+eth0\s+10\.0\.0\.12\s+eni-primary\s+vpc\w+\s+ready\s+\d+[smhd]\S*$/,
    );
    assert.match(lines[2] ?? '', /^default\/web-0\s+c1aaaaaaaaaa\s+eth0\s+10\.0\.0\.11\s/);
    const json = captureCli();
    await runCli(['pods', '--json', '--agent-socket', socket], json);
    const doc = JSON.parse(json.stdout()) as { attachments: { pod: string; ip: string }[] };
    assert.deepEqual(doc.attachments.map((a) => `${a.pod} ${a.ip}`).sort(), [
      'db-0 10.0.0.12',
      'web-0 10.0.0.11',
    ]);
  });
});

test('health is quiet and exits 0 when ready; not ready is one line and exit 3; --live accepts 503', async () => {
  const state = await recordedState('healthy-state');
  await withAgent({ healthz: 200, state }, async (socket) => {
    const cli = captureCli();
    assert.equal(await runCli(['health', '--agent-socket', socket], cli), 0);
    assert.equal(cli.stdout() + cli.stderr(), '');
  });
  await withAgent({ healthz: 503, state }, async (socket) => {
    const ready = captureCli();
    assert.equal(await runCli(['health', '--agent-socket', socket], ready), 3);
    assert.equal(ready.stderr().trimEnd().split('\n').length, 1);
    assert.match(ready.stderr(), /not ready \(healthz answered 503\)/);
    const live = captureCli();
    assert.equal(await runCli(['health', '--live', '--agent-socket', socket], live), 0);
    assert.equal(live.stdout() + live.stderr(), '');
  });
});

test('health and health --live exit 3 with one line when nothing answers', async () => {
  for (const args of [[], ['--live']]) {
    const cli = captureCli();
    assert.equal(await runCli(['health', ...args, '--agent-socket', '/nonexistent/agent.sock'], cli), 3);
    assert.match(cli.stderr(), /^vpcnet agent at \/nonexistent\/agent\.sock does not answer: .*\n$/);
  }
});

test('an unknown option is a usage error (exit 2); --help lists the new commands', async () => {
  const bad = captureCli();
  assert.equal(await runCli(['status', '--bogus'], bad), 2);
  assert.match(bad.stderr(), /bogus/);
  assert.equal(await runCli(['health', '--timeout-ms', 'soon'], captureCli()), 2);
  assert.equal(await runCli(['support-bundle', '--max-pod-namespaces', '-1'], captureCli()), 2);
  const help = captureCli();
  assert.equal(await runCli(['--help'], help), 0);
  for (const c of ['status', 'pods', 'explain', 'support-bundle', 'health'])
    assert.match(help.stdout(), new RegExp(`^  ${c}\\s`, 'm'));
  for (const c of ['status', 'pods', 'explain', 'support-bundle', 'health']) {
    const h = captureCli();
    assert.equal(await runCli([c, '--help'], h), 0);
    assert.match(h.stdout(), new RegExp(`^Usage: vpcnetctl ${c}`));
  }
});

test('status shows the subnet census: free /28s and free addresses per subnet, who reads EC2, a stale one marked', async () => {
  const state = {
    ...((await recordedState('healthy-state')) as Record<string, unknown>),
    census: {
      role: 'follower',
      subnets: [
        {
          subnetId: 'subnet-0a',
          cidr: '10.0.0.0/20',
          takenAt: '2024-05-01T10:00:00.000Z',
          freePrefixes: 0,
          freeAddresses: 3120,
          reservationsKnown: true,
          stale: false,
        },
        {
          subnetId: 'subnet-0b',
          cidr: '10.0.16.0/22',
          takenAt: '2024-05-01T09:00:00.000Z',
          freePrefixes: 41,
          freeAddresses: 900,
          reservationsKnown: false,
          stale: true,
        },
      ],
    },
  };
  await withAgent({ healthz: 200, state }, async (socket) => {
    const cli = captureCli();
    await runCli(['status', '--agent-socket', socket, ...noSpool], cli);
    const text = cli.stdout();
    assert.match(text, /^Subnet census: read from the census Lease \(follower\)$/m);
    assert.match(text, /^subnet-0a\s+10\.0\.0\.0\/20\s+0\s+3120\s+2024-05-01T10:00:00\.000Z\s*$/m);
    assert.match(
      text,
      /^subnet-0b\s+10\.0\.16\.0\/22\s+41\s+900\s+2024-05-01T09:00:00\.000Z \(stale\)\s+reservations unread$/m,
    );
    const json = captureCli();
    await runCli(['status', '--agent-socket', socket, ...noSpool, '--json'], json);
    const doc = JSON.parse(json.stdout()) as { node: { census: { subnets: { freePrefixes: number }[] } } };
    assert.deepEqual(
      doc.node.census.subnets.map((s) => s.freePrefixes),
      [0, 41],
    );
  });
});
