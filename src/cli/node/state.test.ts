// Which agent `vpcnetctl state` and `health` read when no --agent-socket is given: the one the
// environment's VPCNET_AGENT_SOCKET names (a DaemonSet container has the agent's ConfigMap, so
// `kubectl exec ... vpcnetctl state` reads the agent wherever the ConfigMap put its socket).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { captureCli } from '../testing/cli-capture.ts';
import { type FakeAgentSocket, serveFakeAgent } from '../testing/fake-agent-socket.ts';
import { runHealthCommand } from './health.ts';
import { runStateCommand } from './state.ts';

describe('the agent socket a node command reads by default', () => {
  let dir: string;
  let agent: FakeAgentSocket;
  let socket: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'state-socket-'));
    socket = join(dir, 'agent.sock');
    agent = await serveFakeAgent(socket, { healthz: 200, state: { instanceId: 'i-0from-env' } });
  });
  after(async () => {
    await agent.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('state reads the agent at VPCNET_AGENT_SOCKET', async () => {
    const cli = captureCli({ env: { VPCNET_AGENT_SOCKET: socket } });
    assert.equal(await runStateCommand(['--json'], cli), 0, cli.stderr());
    assert.equal((JSON.parse(cli.stdout()) as { instanceId: string }).instanceId, 'i-0from-env');
  });

  test('--agent-socket wins over VPCNET_AGENT_SOCKET', async () => {
    const cli = captureCli({ env: { VPCNET_AGENT_SOCKET: socket } });
    const elsewhere = join(dir, 'none.sock');
    assert.equal(await runStateCommand(['--agent-socket', elsewhere], cli), 3);
    assert.match(cli.stderr(), new RegExp(`no agent answers on ${elsewhere}`));
  });

  test('health (the probes) reads the same agent', async () => {
    let err = '';
    const code = await runHealthCommand(
      [],
      () => undefined,
      (s) => {
        err += s;
      },
      { VPCNET_AGENT_SOCKET: socket },
    );
    assert.equal(code, 0, err);
    assert.ok(agent.requests.includes('GET /v1/healthz'));
  });
});
