// The sanitized C forwarder against agents that misbehave: garbage (fuzzed), huge answers, half an
// answer, one byte at a time, or nothing at all. Every run ends on its own by the deadline, prints
// only a result or a CNI error, and falls back as for an absent agent when no answer came (ADD:
// code 11, DEL: spooled).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { httpAnswer, type RawAgentBehaviour, startRawAgent } from '../../src/plugin/testing/raw-agent.ts';
import {
  assertCleanCniRun,
  assertCleanRun,
  type ForwarderRun,
  prepareSanitizedForwarder,
  TEST_DEADLINE_MS,
} from './sanitized-forwarder.ts';

const prepared = await prepareSanitizedForwarder();
const fwd = typeof prepared === 'string' ? undefined : prepared;

const attach = { CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_NETNS: '/x' };
const MiB = 1 << 20;
const answerBody = JSON.stringify({ exitCode: 0, stdout: '{"cniVersion":"1.0.0"}' });
/** How much later than the deadline a run may end on this busy 2-core machine. */
const SLACK_MS = 8000;

/** Runs `command` against an agent behaving so, then stops the agent. */
async function against(
  behaviour: RawAgentBehaviour,
  command: string,
  spoolDir: string,
  stdinExtra = '',
): Promise<ForwarderRun> {
  const agent = await startRawAgent(behaviour);
  try {
    const stdin = `{"cniVersion":"0.4.0","agentSocket":"${agent.socketPath}","delSpoolDir":"${spoolDir}"${stdinExtra}}`;
    return await fwd!.run({ ...attach, CNI_COMMAND: command }, stdin);
  } finally {
    await agent.close();
  }
}

const spooled = (dir: string) => {
  try {
    return readdirSync(dir).length;
  } catch {
    return 0;
  }
};

describe('the sanitized forwarder against a misbehaving agent', {
  skip: typeof prepared === 'string' && prepared,
}, () => {
  after(() => fwd?.dispose());

  test('fuzzed garbage answers: every run ends cleanly with a CNI error, a DEL is spooled or refused', async () => {
    const headLine = fc.constantFrom(
      'HTTP/1.1 200 OK',
      'HTTP/1.1 413 Payload Too Large',
      'HTTP/1.0 100 Continue',
      'HTTP/1.1 2000 X',
      'HTTP/1.1',
      'HTTP/',
      'content-length: 5',
      'content-length: -1',
      'content-length: 99999999999999999999999',
      'Content-Length: 0x10',
      'transfer-encoding: chunked',
      'transfer-encoding: gzip, chunked',
      'x-no-colon',
      ': empty-name',
      '',
      '0',
      'ffffffffffffffff',
      '5;ext=1',
      '{"exitCode":0,"stdout":"x"}',
      '{"exitCode":1e400,"stdout":""}',
      '{"exitCode":-1,"stdout":""}',
    );
    const structured = fc
      .array(fc.oneof(headLine, fc.string({ maxLength: 40 })), { maxLength: 12 })
      .chain((lines) =>
        fc
          .constantFrom('\r\n', '\n', '\r')
          .map((eol) => Buffer.from(lines.join(eol) + (lines.length ? eol : ''))),
      );
    const bytes = fc.uint8Array({ maxLength: 4096 }).map((a) => Buffer.from(a));
    const answer = fc.oneof(
      structured,
      bytes,
      bytes.map((b) => Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\n'), b])),
    );
    const spool = join(fwd!.dir, 'garbage-spool');
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(answer, fc.constantFrom('ADD', 'DEL', 'CHECK', 'STATUS'), async (data, command) => {
        runs++;
        const before = spooled(spool);
        const r = await against({ kind: 'answer', data, after: 'close' }, command, spool);
        const label = `${command} answered ${JSON.stringify(data.toString('latin1'))}`;
        if (r.code === 0) {
          // Garbage may still hold a well-formed answer (printed as it is), or a DEL was spooled.
          assertCleanRun(r, label);
          return;
        }
        const err = assertCleanCniRun(r, label);
        assert.equal(r.code, 1, label);
        // No answer (11, STATUS: 50) or a bad one (100); a DEL is spooled only in the first case.
        assert.ok([11, 50, 100].includes(err?.code ?? 0), `${label}: code ${err?.code}`);
        assert.equal(spooled(spool), before, `${label}: a DEL that failed spooled nothing`);
      }),
      { numRuns: 150, seed: 7 },
    );
    assert.equal(runs, 150);
  });

  test('answers over 1 MiB (framed by length, by chunks, by the end of the connection, or a huge head) are code 100', async () => {
    const big = Buffer.alloc(8 * MiB, 'a');
    const chunked = Buffer.concat([
      Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n'),
      ...Array.from({ length: 64 }, () => Buffer.from(`20000\r\n${'b'.repeat(0x20000)}\r\n`)),
      Buffer.from('0\r\n\r\n'),
    ]);
    const untilEnd = Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\n\r\n'), big]);
    const hugeHead = Buffer.from(`HTTP/1.1 200 OK\r\n${'x-pad: y\r\n'.repeat(200_000)}\r\n`);
    const cases: Array<[string, Buffer]> = [
      ['content-length', httpAnswer(200, big)],
      ['chunked', chunked],
      ['until the end', untilEnd],
      ['a 2 MiB head', hugeHead],
    ];
    for (const [label, data] of cases) {
      const r = await against({ kind: 'answer', data, after: 'close' }, 'ADD', join(fwd!.dir, 'unused'));
      const err = assertCleanCniRun(r, label);
      assert.equal(err?.code, 100, label);
      assert.match(err?.details ?? '', /response larger than 1048576 bytes$/, label);
    }
  });

  test('half an answer, then the agent closes: no answer, so ADD gets 11 and DEL is spooled', async () => {
    const full = httpAnswer(200, answerBody);
    const halves: Array<[string, Buffer]> = [
      ['half a status line', full.subarray(0, 7)],
      ['the head only', full.subarray(0, full.indexOf('\r\n\r\n') + 4)],
      ['half the body', full.subarray(0, full.length - 10)],
      [
        'half a chunk',
        Buffer.from('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n40\r\n{"exitCode":0'),
      ],
    ];
    for (const [label, data] of halves) {
      const spool = join(fwd!.dir, `half-${label.replaceAll(' ', '-')}`);
      const add = assertCleanCniRun(
        await against({ kind: 'answer', data, after: 'close' }, 'ADD', spool),
        label,
      );
      assert.equal(add?.code, 11, label);
      const del = await against({ kind: 'answer', data, after: 'close' }, 'DEL', spool);
      assertCleanCniRun(del, `DEL ${label}`);
      assert.equal(del.code, 0, `DEL ${label}`);
      assert.equal(spooled(spool), 1, `DEL ${label} was spooled`);
    }
  });

  test('an agent that says nothing, stops halfway, trickles or never reads: the deadline holds', async () => {
    const full = httpAnswer(200, answerBody);
    const stalls: Array<[string, RawAgentBehaviour, string]> = [
      ['nothing', { kind: 'silent' }, ''],
      [
        'half the body, then silence',
        { kind: 'answer', data: full.subarray(0, full.length - 10), after: 'hold' },
        '',
      ],
      [
        'one byte every 100 ms',
        { kind: 'trickle', data: Buffer.concat([full, full, full]), everyMs: 100 },
        '',
      ],
      // A 900 KiB request (under the 1 MiB limit) is more than the socket buffers hold: the
      // forwarder blocks writing.
      ['never reading', { kind: 'unread' }, `,"pad":"${'p'.repeat(900 * 1024)}"`],
    ];
    // All at once: each run spends its time waiting.
    const runs = stalls.flatMap(([label, behaviour, extra]) =>
      ['ADD', 'DEL'].map((command) => {
        const spool = join(fwd!.dir, `stall-${command}-${label.replaceAll(' ', '-')}`);
        return { label, command, spool, run: against(behaviour, command, spool, extra) };
      }),
    );
    for (const { label, command, spool, run } of runs) {
      const r = await run;
      const err = assertCleanCniRun(r, `${command}: ${label}`);
      assert.ok(r.ms >= TEST_DEADLINE_MS - 50, `${command}: ${label}: gave up after ${Math.round(r.ms)} ms`);
      assert.ok(r.ms < TEST_DEADLINE_MS + SLACK_MS, `${command}: ${label}: took ${Math.round(r.ms)} ms`);
      if (command === 'ADD') {
        assert.equal(err?.code, 11, label);
        assert.match(err?.msg ?? '', new RegExp(`no answer within ${TEST_DEADLINE_MS} ms; try again later$`));
      } else {
        assert.equal(r.code, 0, `DEL ${label} is spooled`);
        assert.equal(spooled(spool), 1);
      }
    }
  });
});
