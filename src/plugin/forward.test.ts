import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AGENT_CNI_PATH } from '../cni/wire.ts';
import {
  AgentProtocolError,
  AgentRefusedTooLargeError,
  AgentUnreachableError,
  forwardToAgent,
  SOCKET_PATH_MAX,
  socketPathProblem,
} from './forward.ts';
import { answerWith, startFakeAgent } from './testing/fake-agent.ts';

const timeouts = { connectMs: 1_000, totalMs: 5_000 };
const request = { env: { CNI_COMMAND: 'ADD' }, stdin: '{"cniVersion":"1.0.0"}' };

test('forwardToAgent POSTs the request as JSON to the CNI path and returns the decoded answer', async () => {
  const agent = await startFakeAgent(answerWith(0, '{"cniVersion":"1.0.0"}'));
  try {
    const res = await forwardToAgent(agent.socketPath, request, timeouts);
    assert.deepEqual(res, { exitCode: 0, stdout: '{"cniVersion":"1.0.0"}' });
    assert.equal(agent.requests.length, 1);
    assert.equal(agent.requests[0]?.method, 'POST');
    assert.equal(agent.requests[0]?.url, AGENT_CNI_PATH);
    assert.equal(agent.requests[0]?.contentType, 'application/json');
    assert.deepEqual(JSON.parse(agent.requests[0]?.body ?? ''), request);
  } finally {
    await agent.close();
  }
});

test('a missing socket is reported as unreachable with the socket path', async () => {
  const path = join(tmpdir(), `vpcnet-no-such-${process.pid}.sock`);
  await assert.rejects(
    forwardToAgent(path, request, timeouts),
    (e) => e instanceof AgentUnreachableError && e.socketPath === path && e.reason.includes('ENOENT'),
  );
});

test('a path with no listener (refused) is reported as unreachable', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-forward-'));
  const path = join(dir, 'stale.sock');
  writeFileSync(path, '');
  try {
    await assert.rejects(
      forwardToAgent(path, request, timeouts),
      (e) => e instanceof AgentUnreachableError && e.reason.includes('ECONNREFUSED'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an agent that never answers is reported unreachable once the total timeout passes', async () => {
  const agent = await startFakeAgent(() => 'hang');
  try {
    const started = Date.now();
    await assert.rejects(
      forwardToAgent(agent.socketPath, request, { connectMs: 1_000, totalMs: 200 }),
      (e) => e instanceof AgentUnreachableError && e.reason === 'no answer within 200 ms',
    );
    assert.ok(Date.now() - started < 2_000, 'gave up near the timeout');
  } finally {
    await agent.close();
  }
});

test('an HTTP error status or a body that is not a ForwardedResponse is a protocol error', async () => {
  const replies = [
    { status: 500, body: 'boom' },
    { status: 200, body: 'not json' },
    { status: 200, body: '{"exitCode":"0","stdout":""}' },
    { status: 200, body: '{"exitCode":0}' },
  ];
  for (const reply of replies) {
    const agent = await startFakeAgent(() => reply);
    try {
      await assert.rejects(
        forwardToAgent(agent.socketPath, request, timeouts),
        (e) => e instanceof AgentProtocolError,
        reply.body,
      );
    } finally {
      await agent.close();
    }
  }
});

test('a socket path a unix socket cannot have is named before any connection: a NUL, or over 107 bytes', () => {
  assert.equal(SOCKET_PATH_MAX, 107);
  assert.equal(socketPathProblem(`/${'a'.repeat(106)}`), undefined);
  assert.match(socketPathProblem(`/${'a'.repeat(107)}`) ?? '', /^is 108 bytes long, more than the 107 /);
  // Bytes, not characters: 60 two-byte characters are 121 bytes.
  assert.match(socketPathProblem(`/${'é'.repeat(60)}`) ?? '', /^is 121 bytes long/);
  assert.equal(socketPathProblem('/run/agent.sock\u0000tail'), 'contains a NUL byte');
});

test('a refusal the agent words as a CNI error is returned as its answer; a success under an error status is not; a 413 is its own error', async () => {
  const refusal = { exitCode: 1, stdout: '{"code":6}' };
  const refusing = await startFakeAgent(() => ({ status: 400, body: JSON.stringify(refusal) }));
  const tooLarge = await startFakeAgent(() => ({ status: 413, body: JSON.stringify(refusal) }));
  const lying = await startFakeAgent(() => ({
    status: 500,
    body: JSON.stringify({ exitCode: 0, stdout: '' }),
  }));
  try {
    assert.deepEqual(await forwardToAgent(refusing.socketPath, request, timeouts), refusal);
    await assert.rejects(forwardToAgent(lying.socketPath, request, timeouts), AgentProtocolError);
    await assert.rejects(forwardToAgent(tooLarge.socketPath, request, timeouts), AgentRefusedTooLargeError);
  } finally {
    await tooLarge.close();
    await refusing.close();
    await lying.close();
  }
});
