// One request size limit for plugin and agent (MAX_REQUEST_BYTES): both forwarders refuse a larger
// request before they connect, with code 7 naming the limit, never "try again later" and never
// spooled; a 413 from the agent is the same permanent error.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CNI_ERR_INVALID_NETCONF } from '../cni/errors.ts';
import { MAX_REQUEST_BYTES, requestTooLargeMessage } from '../cni/wire.ts';
import { attachEnv, builtPlugins, errorOf, netconf } from './testing/built-plugins.ts';
import { answerWith, startFakeAgent } from './testing/fake-agent.ts';

const { dir, exec, same } = builtPlugins();

/** stdin for `env` padded so that the request body is exactly `bytes` long. */
function stdinForBody(env: Record<string, string>, socket: string, bytes: number): string {
  const bare = Buffer.byteLength(JSON.stringify({ env, stdin: netconf({ agentSocket: socket, pad: '' }) }));
  return netconf({ agentSocket: socket, pad: 'p'.repeat(bytes - bare) });
}

test('a request at the limit is forwarded; one byte over fails both with code 7 naming the limit, before connecting', async () => {
  const agent = await startFakeAgent(answerWith(0, ''));
  try {
    for (const command of ['ADD', 'DEL', 'CHECK']) {
      const env = { ...attachEnv, CNI_COMMAND: command };
      const at = await same(env, stdinForBody(env, agent.socketPath, MAX_REQUEST_BYTES), `${command} at`);
      assert.equal(at.code, 0, `${command}: a request of exactly the limit passes`);
      const before = agent.requests.length;
      const over = await same(env, stdinForBody(env, agent.socketPath, MAX_REQUEST_BYTES + 1), command);
      assert.equal(over.code, 1);
      assert.deepEqual(errorOf(over), {
        cniVersion: '1.0.0',
        code: CNI_ERR_INVALID_NETCONF,
        msg: requestTooLargeMessage(),
        details: `${MAX_REQUEST_BYTES + 1} bytes of network configuration and CNI_* environment`,
      });
      assert.equal(agent.requests.length, before, `${command}: the oversized request reached the agent`);
    }
  } finally {
    await agent.close();
  }
});

test('a request made large by escaping or by a huge stdin fails both with code 7, identically', async () => {
  const agent = await startFakeAgent(answerWith(0, ''));
  try {
    // Control characters grow sixfold once escaped: two values of 100 KiB make a 1.2 MiB request.
    const control = '\u0001'.repeat(100 * 1024);
    const escaped = { ...attachEnv, CNI_COMMAND: 'ADD', CNI_ARGS: control, CNI_X: control };
    const e = await same(escaped, netconf({ cniVersion: '0.4.0', agentSocket: agent.socketPath }), 'escaped');
    assert.equal(errorOf(e).code, 7);
    assert.equal(errorOf(e).cniVersion, '0.4.0');
    assert.match(errorOf(e).details ?? '', /^\d+ bytes of network configuration and CNI_\* environment$/);
    // stdin alone over the limit: not even looked into (the error has the default version).
    const huge = netconf({
      cniVersion: '0.4.0',
      agentSocket: agent.socketPath,
      pad: 'p'.repeat(MAX_REQUEST_BYTES),
    });
    const h = await same({ ...attachEnv, CNI_COMMAND: 'ADD' }, huge, 'huge stdin');
    assert.deepEqual(errorOf(h), {
      cniVersion: '1.0.0',
      code: 7,
      msg: requestTooLargeMessage(),
      details: 'the network configuration on stdin alone is larger than that',
    });
    assert.equal(agent.requests.length, 0);
  } finally {
    await agent.close();
  }
});

test('with the agent down, an oversized DEL fails with code 7 and is never spooled', async () => {
  const spool = join(dir, 'spool-oversized');
  const env = { ...attachEnv, CNI_COMMAND: 'DEL' };
  const stdin = netconf({
    agentSocket: join(dir, 'absent.sock'),
    delSpoolDir: spool,
    pad: 'p'.repeat(MAX_REQUEST_BYTES),
  });
  for (const plugin of ['native', 'js'] as const) {
    const out = await exec(plugin, env, stdin);
    assert.equal(out.code, 1, plugin);
    assert.equal(errorOf(out).code, 7, plugin);
    assert.equal(existsSync(spool), false, `${plugin}: the DEL was spooled`);
  }
});

test('a 413 from the agent is code 7 for both, whatever its body says', async () => {
  for (const body of [
    JSON.stringify({ exitCode: 1, stdout: '{"cniVersion":"1.0.0","code":6,"msg":"too large"}' }),
    'Payload Too Large',
  ]) {
    const agent = await startFakeAgent(() => ({ status: 413, body }));
    try {
      const out = await same(
        { ...attachEnv, CNI_COMMAND: 'DEL' },
        netconf({ agentSocket: agent.socketPath }),
        body,
      );
      assert.equal(out.code, 1);
      assert.deepEqual(errorOf(out), {
        cniVersion: '1.0.0',
        code: 7,
        msg: requestTooLargeMessage(),
        details: `the vpcnet agent at ${agent.socketPath} refused it (HTTP 413)`,
      });
    } finally {
      await agent.close();
    }
  }
});
