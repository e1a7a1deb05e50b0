// Graceful stop: an ADD in flight when the stop begins is finished, answered and durable; a
// request arriving after it began gets no answer (its connection is closed or refused), which the
// plugin treats as an unreachable agent: it spools a DEL and fails an ADD with "try again later".

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Dataplane } from '../dataplane/dataplane.ts';
import { pathExists } from '../infra/path-exists.ts';
import { Ledger } from '../ledger/ledger.ts';
import { FileLedgerStore } from '../ledger/storage/store.ts';
import { agentWorlds, until } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';
import { heldKernel } from './testing/held-kernel.ts';
import { rawExchange, rawPost } from './testing/raw-rpc-client.ts';

const worlds = agentWorlds();

const body = (command: string, containerId: string, netns: string) =>
  JSON.stringify(cniRequest(command, containerId, netns, `pod-${containerId}`, `uid-${containerId}`));

/** Sends the request head now and its body when told; reports whether any answer came. */
function splitRequest(socketPath: string, payload: Buffer) {
  const headEnd = payload.indexOf('\r\n\r\n') + 4;
  const chunks: Buffer[] = [];
  const socket = connect(socketPath);
  socket.on('error', () => undefined);
  socket.on('data', (c: Buffer) => chunks.push(c));
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8'))),
  );
  socket.write(payload.subarray(0, headEnd));
  return {
    sendBody: () => {
      if (!socket.destroyed) socket.write(payload.subarray(headEnd));
    },
    answer: closed,
  };
}

test('stop finishes the ADD in flight (answered, in the ledger on disk) and answers no request that arrives after it began', async () => {
  let cleanup: () => Promise<void> = async () => undefined;
  try {
    const w = await worlds.world();
    const { config } = w;
    const kernel = heldKernel(w.kernel);
    const agent = await w.start({ dataplane: new Dataplane(kernel.kernel) });
    // A failed assertion must not leave the agent running (its timers would hold the test file).
    cleanup = async () => {
      kernel.release();
      await agent.stop();
    };
    const netns = await w.netns('a');
    const socket = config.agentSocket;

    kernel.hold();
    const add = rawExchange(socket, [rawPost('/v1/cni', body('ADD', 'inflight', netns))], {
      timeoutMs: 30_000,
    });
    await until(() => kernel.waiting() > 0, 10_000);
    assert.ok(kernel.waiting() > 0, 'the ADD reached the kernel');
    // A connection accepted before the stop, whose request is complete only after it began.
    const late = splitRequest(socket, rawPost('/v1/cni', body('DEL', 'late', netns)));
    await sleep(100);

    let stopped = false;
    const stop = agent.stop().then(() => {
      stopped = true;
    });
    late.sendBody();
    const fresh = await rawExchange(socket, [rawPost('/v1/cni', body('DEL', 'fresh', netns))], {
      timeoutMs: 10_000,
    });
    assert.equal(fresh.status, undefined, `a new connection got an answer: ${fresh.body}`);
    assert.equal(await pathExists(socket), false, 'the socket file is gone once the stop began');
    assert.equal(await late.answer, '', 'a request completed after the stop began got an answer');
    await sleep(100);
    assert.equal(stopped, false, 'stop did not wait for the ADD in flight');

    kernel.release();
    const answered = await add;
    assert.equal(answered.status, 200);
    const response = JSON.parse(answered.body) as { exitCode: number; stdout: string };
    assert.equal(response.exitCode, 0, response.stdout);
    const ip = ipOf(response.stdout);
    await stop;
    cleanup = async () => undefined;

    const store = new FileLedgerStore(join(config.stateDir, 'ledger.json'));
    const ledger = await Ledger.open(store, { now: Date.now });
    const att = ledger.list().find((a) => a.key.containerId === 'inflight');
    assert.ok(att !== undefined, 'the answered ADD is not in the ledger on disk');
    assert.equal(att.phase, undefined, 'the answered ADD is still recorded as half-done');
    assert.equal(ledger.findByIp(ip)?.key.containerId, 'inflight');
    assert.equal(ledger.list().length, 1, 'a request refused during the stop changed the ledger');
  } finally {
    await cleanup();
  }
});

test('a CNI request handed to a stopping agent in-process is answered "try again later" (code 11)', async () => {
  const w = await worlds.world();
  const agent = await w.start();
  const netns = await w.netns('a');
  await agent.stop();
  const out = await agent.cni(cniRequest('ADD', 'after', netns));
  assert.equal(out.exitCode, 1);
  assert.equal((JSON.parse(out.stdout) as { code: number }).code, 11);
  assert.equal(agent.ledger.list().length, 0);
});

test('an ADD waiting for the pool to grow is answered "try again later" (code 11) as the stop begins, not after its wait', async () => {
  // The world's node: 11 addresses and no room to grow, so the 12th ADD waits.
  const w = await worlds.world({ VPCNET_ADD_WAIT_SECONDS: '600' });
  const agent = await w.start();
  for (let i = 0; i < 11; i++) {
    const out = await agent.cni(cniRequest('ADD', `c${i}`, await w.netns(`c${i}`), `p${i}`, `u${i}`));
    if (out.exitCode !== 0) await agent.stop(); // else its timers would hold the test file
    assert.equal(out.exitCode, 0, out.stdout);
  }
  let answered = false;
  const waiting = agent.cni(cniRequest('ADD', 'waits', await w.netns('waits'), 'pw', 'uw')).finally(() => {
    answered = true;
  });
  await sleep(200);
  assert.equal(answered, false, 'the 12th ADD did not wait for an address');
  const started = performance.now();
  await agent.stop();
  const out = await waiting;
  assert.ok(performance.now() - started < 30_000, 'the stop waited out the ADD');
  assert.equal(out.exitCode, 1);
  const err = JSON.parse(out.stdout) as { code: number; details?: string };
  assert.equal(err.code, 11, out.stdout);
  assert.match(err.details ?? '', /stopping/);
  assert.equal(agent.ledger.list().length, 11);
});

test('stop waits for an ADD whose client went away (no connection left to wait on) before it makes the ledger durable', async () => {
  const w = await worlds.world();
  const { config } = w;
  const kernel = heldKernel(w.kernel);
  const agent = await w.start({ dataplane: new Dataplane(kernel.kernel) });
  let stopping: Promise<void> | undefined;
  try {
    const netns = await w.netns('a');
    kernel.hold();
    // The client gives up (a plugin killed by the runtime's timeout) while the ADD is in the kernel.
    const client = connect(config.agentSocket);
    client.on('error', () => undefined);
    client.write(rawPost('/v1/cni', body('ADD', 'orphan', netns)));
    await until(() => kernel.waiting() > 0, 10_000);
    assert.ok(kernel.waiting() > 0, 'the ADD is not in the kernel');
    client.destroy();
    await new Promise((resolve) => client.once('close', resolve));
    let stopped = false;
    stopping = agent.stop();
    const stop = stopping.then(() => {
      stopped = true;
    });
    await sleep(300);
    assert.equal(stopped, false, 'the stop ended while an ADD was still in the kernel');
    kernel.release();
    await stop;
    const ledger = await Ledger.open(new FileLedgerStore(join(config.stateDir, 'ledger.json')), {
      now: Date.now,
    });
    assert.equal(ledger.list()[0]?.phase, undefined, 'the finished ADD is not durable as done');
  } finally {
    kernel.release();
    await (stopping ?? agent.stop());
  }
});
