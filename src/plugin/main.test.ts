import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_AGENT_SOCKET, type ForwardedRequest } from '../cni/wire.ts';
import { DEFAULT_DEL_SPOOL_DIR } from '../spool/format.ts';
import { spoolDel } from '../spool/write.ts';
import { type AgentTransport, AgentUnreachableError, httpTransport } from './forward.ts';
import { type PluginDeps, runPlugin } from './main.ts';
import { answerWith, startFakeAgent } from './testing/fake-agent.ts';

interface Run {
  readonly exitCode: number;
  readonly stdout: string;
}

async function run(overrides: Partial<PluginDeps> & Pick<PluginDeps, 'env' | 'stdin'>): Promise<Run> {
  let stdout = '';
  const exitCode = await runPlugin({
    transport: httpTransport({ connectMs: 1_000, totalMs: 5_000 }),
    spool: spoolDel,
    writeStdout: (t) => {
      stdout += t;
    },
    ...overrides,
  });
  return { exitCode, stdout };
}

const netconf = (extra: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet', ...extra });

const attachEnv = {
  CNI_CONTAINERID: '30c8f1e2',
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/p1',
  CNI_PATH: '/opt/cni/bin',
};

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'vpcnet-plugin-'));
}

const noTransport: AgentTransport = () => {
  throw new Error('the plugin must not contact the agent here');
};

test('the plugin forwards only CNI_* env and stdin verbatim, and prints the agent stdout and exit code', async () => {
  const result = '{"cniVersion":"1.0.0","ips":[{"address":"10.0.1.23/32"}]}';
  const agent = await startFakeAgent(answerWith(0, result));
  try {
    const stdin = `${netconf({ agentSocket: agent.socketPath })}\n`;
    const env = { ...attachEnv, CNI_COMMAND: 'ADD', HOME: '/root', PATH: '/usr/bin' };
    const out = await run({ env, stdin });
    assert.deepEqual(out, { exitCode: 0, stdout: result });
    assert.equal(agent.requests.length, 1);
    const sent = JSON.parse(agent.requests[0]?.body ?? '') as ForwardedRequest;
    assert.equal(sent.stdin, stdin);
    assert.deepEqual(sent.env, { ...attachEnv, CNI_COMMAND: 'ADD' });
  } finally {
    await agent.close();
  }
});

test("the agent's error answer and non-zero exit code pass through unchanged", async () => {
  const error = '{"cniVersion":"1.0.0","code":7,"msg":"config.name is required"}';
  const agent = await startFakeAgent(answerWith(1, error));
  try {
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: 'ADD' },
      stdin: JSON.stringify({ cniVersion: '1.0.0', agentSocket: agent.socketPath }),
    });
    assert.deepEqual(out, { exitCode: 1, stdout: error });
  } finally {
    await agent.close();
  }
});

test('without agentSocket in the config the plugin uses the default socket', async () => {
  let usedSocket = '';
  const transport: AgentTransport = async (socketPath) => {
    usedSocket = socketPath;
    return { exitCode: 0, stdout: '' };
  };
  await run({ env: { ...attachEnv, CNI_COMMAND: 'ADD' }, stdin: netconf({}), transport });
  assert.equal(usedSocket, DEFAULT_AGENT_SOCKET);
});

test('VERSION is answered by the plugin itself for the requested version', async () => {
  const out = await run({
    env: { CNI_COMMAND: 'VERSION' },
    stdin: '{"cniVersion":"0.4.0"}',
    transport: noTransport,
  });
  assert.equal(out.exitCode, 0);
  assert.deepEqual(JSON.parse(out.stdout), {
    cniVersion: '0.4.0',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
});

test('VERSION with empty or unreadable stdin answers for 1.0.0', async () => {
  for (const stdin of ['', 'garbage']) {
    const out = await run({ env: { CNI_COMMAND: 'VERSION' }, stdin, transport: noTransport });
    assert.equal(JSON.parse(out.stdout).cniVersion, '1.0.0', JSON.stringify(stdin));
  }
});

test('ADD and CHECK with no agent fail with code 11 naming the socket', async () => {
  const socket = join(tmpdir(), `vpcnet-absent-${process.pid}.sock`);
  for (const command of ['ADD', 'CHECK']) {
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: command },
      stdin: JSON.stringify({ cniVersion: '0.4.0', agentSocket: socket }),
    });
    assert.equal(out.exitCode, 1, command);
    const err = JSON.parse(out.stdout);
    assert.equal(err.code, 11, command);
    assert.equal(err.cniVersion, '0.4.0', 'error stamped with the request version');
    assert.match(err.msg, new RegExp(`vpcnet agent not reachable at ${socket}: .*ENOENT.*; try again later`));
  }
});

test('STATUS with no agent fails with code 50', async () => {
  const socket = join(tmpdir(), `vpcnet-absent-${process.pid}.sock`);
  const out = await run({
    env: { CNI_COMMAND: 'STATUS' },
    stdin: JSON.stringify({ cniVersion: '1.1.0', agentSocket: socket }),
  });
  assert.equal(out.exitCode, 1);
  assert.equal(JSON.parse(out.stdout).code, 50);
  assert.ok(JSON.parse(out.stdout).msg.includes(socket));
});

test('DEL with no agent is spooled (file content = the forwarded request), succeeds and prints nothing', async () => {
  const dir = tempDir();
  try {
    const spoolDir = join(dir, 'del-spool');
    const stdin = netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: spoolDir });
    const out = await run({ env: { ...attachEnv, CNI_COMMAND: 'DEL', HOME: '/root' }, stdin });
    assert.deepEqual(out, { exitCode: 0, stdout: '' });
    const files = readdirSync(spoolDir);
    assert.equal(files.length, 1);
    assert.deepEqual(JSON.parse(readFileSync(join(spoolDir, files[0] ?? ''), 'utf8')), {
      env: { ...attachEnv, CNI_COMMAND: 'DEL' },
      stdin,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two DELs while the agent is down are spooled in arrival order', async () => {
  const dir = tempDir();
  try {
    const stdin = netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: dir });
    for (const id of ['a279', '30c8']) {
      const out = await run({ env: { ...attachEnv, CNI_CONTAINERID: id, CNI_COMMAND: 'DEL' }, stdin });
      assert.equal(out.exitCode, 0);
    }
    const ids = readdirSync(dir)
      .filter((n) => n.endsWith('.del.json'))
      .sort()
      .map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')).env.CNI_CONTAINERID);
    assert.deepEqual(ids, ['a279', '30c8']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('DEL uses the default spool dir when the config names none', async () => {
  let usedDir = '';
  const unreachable: AgentTransport = async (socketPath) => {
    throw new AgentUnreachableError(socketPath, 'ECONNREFUSED');
  };
  const out = await run({
    env: { ...attachEnv, CNI_COMMAND: 'DEL' },
    stdin: netconf({}),
    transport: unreachable,
    spool: (dir) => {
      usedDir = dir;
      return join(dir, 'x');
    },
  });
  assert.equal(out.exitCode, 0);
  assert.equal(usedDir, DEFAULT_DEL_SPOOL_DIR);
});

test('DEL fails with code 5 naming the spool dir when neither agent nor spool is usable', async () => {
  const dir = tempDir();
  try {
    writeFileSync(join(dir, 'file'), '');
    const spoolDir = join(dir, 'file', 'spool');
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: 'DEL' },
      stdin: netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: spoolDir }),
    });
    assert.equal(out.exitCode, 1);
    const err = JSON.parse(out.stdout);
    assert.equal(err.code, 5);
    assert.ok(err.msg.includes(spoolDir), err.msg);
    assert.ok(err.details.includes('not reachable'), 'details say why the agent was not used');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an agent that answers garbage makes the plugin fail with internal error 100, not spool', async () => {
  const agent = await startFakeAgent(() => ({ status: 500, body: 'panic' }));
  const dir = tempDir();
  try {
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: 'DEL' },
      stdin: netconf({ agentSocket: agent.socketPath, delSpoolDir: dir }),
    });
    assert.equal(out.exitCode, 1);
    assert.equal(JSON.parse(out.stdout).code, 100);
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('DEL whose agent stops answering is spooled after the timeout instead of failing', async () => {
  const agent = await startFakeAgent(() => 'hang');
  const dir = tempDir();
  try {
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: 'DEL' },
      stdin: netconf({ agentSocket: agent.socketPath, delSpoolDir: dir }),
      transport: httpTransport({ connectMs: 1_000, totalMs: 200 }),
    });
    assert.deepEqual(out, { exitCode: 0, stdout: '' });
    assert.equal(readdirSync(dir).filter((n) => n.endsWith('.del.json')).length, 1);
  } finally {
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a config that is not JSON fails with code 6 without contacting any agent or spooling', async () => {
  for (const command of ['ADD', 'DEL', 'CHECK']) {
    const out = await run({
      env: { ...attachEnv, CNI_COMMAND: command },
      stdin: '{"cniVersion":"1.0.0", "name": ',
      transport: noTransport,
      spool: () => {
        throw new Error('must not spool');
      },
    });
    assert.equal(out.exitCode, 1);
    assert.equal((JSON.parse(out.stdout) as { code: number }).code, 6);
  }
});
