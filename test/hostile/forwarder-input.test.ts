// The C forwarder, built with AddressSanitizer and UndefinedBehaviorSanitizer, fed what a runtime
// should never send: stdin past its buffers, deep nesting, invalid UTF-8 and NUL bytes, huge and
// countless CNI_* values, socket paths and spool dirs no file can have. Every run must end on its
// own, with nothing on stderr (no sanitizer report), printing only a result or a CNI error.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { httpAnswer, type RawAgent, startRawAgent } from '../../src/plugin/testing/raw-agent.ts';
import {
  assertCleanCniRun,
  assertCleanRun,
  prepareSanitizedForwarder,
  runForwarder,
} from './sanitized-forwarder.ts';

const prepared = await prepareSanitizedForwarder();
const fwd = typeof prepared === 'string' ? undefined : prepared;

const ok = httpAnswer(200, JSON.stringify({ exitCode: 0, stdout: '{"cniVersion":"1.0.0"}' }));
const attach = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_NETNS: '/x' };
const MiB = 1 << 20;

/** The request the agent got, decoded. */
function forwarded(agent: RawAgent, k: number): { env: Record<string, string>; stdin: string } {
  const raw = agent.requests[k];
  assert.ok(raw, `request ${k} reached the agent`);
  return JSON.parse(raw.subarray(raw.indexOf('\r\n\r\n') + 4).toString('utf8'));
}

describe('the sanitized forwarder on hostile input', {
  skip: typeof prepared === 'string' && prepared,
}, () => {
  let agent: RawAgent;
  const config = (extra: string) => `{"cniVersion":"1.0.0","agentSocket":"${agent.socketPath}"${extra}}`;

  after(async () => {
    await agent?.close();
    fwd?.dispose();
  });

  test('stdin just under, at, just over and far over the 1 MiB request limit: forwarded, or refused with code 7', async () => {
    agent = await startRawAgent({ kind: 'answer', data: ok, after: 'close' });
    // The request holds stdin (escaped) and the CNI_* environment: the largest stdin that fits.
    const body = (stdin: string) => Buffer.byteLength(JSON.stringify({ env: attach, stdin }));
    const under = config(`,"pad":"${'p'.repeat(MiB - body(config(',"pad":""')))}"`);
    assert.equal(body(under), MiB);
    const fits = await fwd!.run(attach, under);
    assertCleanCniRun(fits, 'a request of exactly 1 MiB');
    assert.equal(fits.code, 0);
    assert.equal(forwarded(agent, 0).stdin, under);
    const at = config(`,"pad":"${'p'.repeat(MiB - config(',"pad":""').length)}"`);
    assert.equal(Buffer.byteLength(at), MiB);
    for (const [label, stdin, details] of [
      ['stdin of exactly 1 MiB', at, /^\d+ bytes of network configuration and CNI_\* environment$/],
      [
        'stdin of 1 MiB + 1',
        `${at.slice(0, -1)} }`,
        /^the network configuration on stdin alone is larger than that$/,
      ],
      ['stdin of 16 MiB', `${at.slice(0, -1)}${' '.repeat(15 * MiB)}}`, /alone is larger than that$/],
    ] as const) {
      const err = assertCleanCniRun(await fwd!.run(attach, stdin), label);
      assert.equal(err?.code, 7, label);
      assert.equal(err?.msg, 'request to the vpcnet agent is larger than 1048576 bytes', label);
      assert.match(err?.details ?? '', details, label);
    }
    assert.equal(agent.requests.length, 1, 'an oversized request never reaches the agent');
  });

  test('deep nesting: 400,000 levels of arrays or objects pass, unbalanced ones are code 6, in the answer too', async () => {
    const depth = 400_000;
    const cases: Array<[string, string, number]> = [
      ['arrays', config(`,"deep":${'['.repeat(depth)}${']'.repeat(depth)}`), 0],
      ['objects', config(`,"deep":${'{"a":'.repeat(depth / 4)}1${'}'.repeat(depth / 4)}`), 0],
      ['unclosed', config(`,"deep":${'['.repeat(depth)}`), 6],
      ['mismatched', config(`,"deep":${'['.repeat(depth)}${'}'.repeat(depth)}`), 6],
    ];
    for (const [label, stdin, code] of cases) {
      const r = await fwd!.run(attach, stdin);
      const err = assertCleanCniRun(r, label);
      assert.equal(err?.code ?? 0, code, label);
    }
    const deepAnswer = `{"exitCode":0,"stdout":"{}","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const deepAgent = await startRawAgent({
      kind: 'answer',
      data: httpAnswer(200, deepAnswer),
      after: 'close',
    });
    try {
      const r = await fwd!.run(attach, `{"agentSocket":"${deepAgent.socketPath}"}`);
      assertCleanCniRun(r, 'deep answer');
      assert.equal(r.stdout.toString(), '{}');
    } finally {
      await deepAgent.close();
    }
  });

  test('invalid UTF-8 and NUL bytes in stdin, the environment and the answer', async () => {
    const before = agent.requests.length;
    const bad = Buffer.from([0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xf4, 0x90, 0x80, 0x80, 0xe2, 0x82]);
    const wrap = (inner: Buffer) =>
      Buffer.concat([Buffer.from(config(',"x":"').slice(0, -1)), inner, Buffer.from('"}')]);
    const good = await fwd!.run(attach, wrap(bad));
    assertCleanCniRun(good, 'invalid UTF-8 in a string');
    assert.equal(good.code, 0);
    assert.match(forwarded(agent, before).stdin, /"x":"\ufffd+"/);
    for (const [label, stdin] of [
      ['a raw NUL in a string', wrap(Buffer.from([0x61, 0x00, 0x62]))],
      [
        'a raw NUL between members',
        Buffer.from(`${config('')}`.replace(',"agentSocket"', '\u0000,"agentSocket"')),
      ],
      ['invalid UTF-8 outside strings', Buffer.concat([Buffer.from(config('')), bad])],
    ] as const) {
      const err = assertCleanCniRun(await fwd!.run(attach, stdin), label);
      assert.equal(err?.code, 6, label);
    }
    // The environment: raw bytes only a shell can put there (Node's env values are strings).
    const viaShell = await runForwarder(
      ['/bin/sh', '-c', 'CNI_ARGS="$(printf "K=\\377\\300\\355\\240\\200;")" exec "$0"', fwd!.bin],
      attach,
      config(''),
    );
    assertCleanCniRun(viaShell, 'invalid UTF-8 in CNI_ARGS');
    assert.match(forwarded(agent, agent.requests.length - 1).env.CNI_ARGS ?? '', /^K=\ufffd+;$/);
    // The answer: invalid bytes in its stdout, an escaped NUL, and a raw NUL (not JSON).
    const answers: Array<[Buffer, number]> = [
      [Buffer.concat([Buffer.from('{"exitCode":0,"stdout":"'), bad, Buffer.from('\\u0000"}')]), 0],
      [Buffer.from('{"exitCode":0,"stdout":"a\u0000b"}'), 1],
    ];
    for (const [body, code] of answers) {
      const odd = await startRawAgent({ kind: 'answer', data: httpAnswer(200, body), after: 'close' });
      try {
        const r = await fwd!.run(attach, `{"agentSocket":"${odd.socketPath}"}`);
        const label = `answer ${JSON.stringify(body.toString('latin1'))}`;
        assertCleanRun(r, label);
        assert.equal(r.code, code);
        if (code === 0) assert.equal(r.stdout.toString('utf8'), `${bad.toString('utf8')}\u0000`);
        else assert.equal(assertCleanCniRun(r, label)?.code, 100);
      } finally {
        await odd.close();
      }
    }
  });

  test('huge and countless CNI_* values: forwarded intact up to the 1 MiB request, refused with 7 past it', async () => {
    const long = 'a'.repeat(128 * 1024 - 'CNI_ARGS='.length - 1); // the most one variable can hold
    const before = agent.requests.length;
    const r = await fwd!.run(
      { ...attach, CNI_ARGS: long, CNI_CONTAINERID: 'c'.repeat(64 * 1024) },
      config(''),
    );
    assertCleanCniRun(r, 'long values');
    assert.equal(forwarded(agent, before).env.CNI_ARGS, long);
    // 60,000 variables: linear, so well within the time a runtime allows.
    const many: Record<string, string> = { ...attach };
    for (let k = 0; k < 60_000; k++) many[`CNI_V${k}`] = '1';
    const countless = await fwd!.run(many, config(''));
    assertCleanCniRun(countless, '60,000 variables');
    assert.ok(countless.ms < 10_000, `60,000 variables took ${Math.round(countless.ms)} ms`);
    assert.equal(Object.keys(forwarded(agent, before + 1).env).length, 60_004);
    // Control characters grow sixfold when escaped: 14 values of 128 KiB make an 11 MiB request.
    const control: Record<string, string> = { ...attach };
    for (let k = 0; k < 14; k++) control[`CNI_X${k}`] = '\u0001'.repeat(128 * 1024 - 16);
    const err = assertCleanCniRun(await fwd!.run(control, config('')), 'escaped past 1 MiB');
    assert.equal(err?.code, 7);
    assert.equal(err?.msg, 'request to the vpcnet agent is larger than 1048576 bytes');
    const requestBytes = Buffer.byteLength(JSON.stringify({ env: control, stdin: config('') }));
    assert.equal(err?.details, `${requestBytes} bytes of network configuration and CNI_* environment`);
  });

  test('a repeated CNI_* name keeps its first value, as Node does', async () => {
    // Only a raw execve can pass a name twice; a tiny launcher does that.
    const launcher = join(fwd!.dir, 'execve-twice');
    const source =
      '#include <unistd.h>\nint main(int c, char **v) { (void)c; char *e[] = {"CNI_COMMAND=ADD", ' +
      '"CNI_ARGS=first", "PATH=/bin", "CNI_ARGS=second", 0}; execve(v[1], v + 1, e); return 127; }';
    await promisify(execFile)('sh', ['-c', `printf '%s' "$1" | cc -x c - -o "$0"`, launcher, source]);
    const before = agent.requests.length;
    assertCleanCniRun(await runForwarder([launcher, fwd!.bin], {}, config('')), 'execve twice');
    assert.deepEqual(forwarded(agent, before).env, { CNI_COMMAND: 'ADD', CNI_ARGS: 'first' });
  });

  test('socket paths that no socket can have are code 7, however long their message gets', async () => {
    const cases: Array<[string, Buffer]> = [
      ['108 bytes', Buffer.from(`/${'s'.repeat(107)}`)],
      ['a NUL', Buffer.from(`${agent.socketPath}\\u0000x`)],
      // (stdin, once decoded, must stay under the 1 MiB request limit to get this far)
      ['1/3 MiB of invalid bytes (1 MiB once decoded)', Buffer.alloc(Math.floor(MiB / 3) - 100, 0xff)],
      ['escaped control characters', Buffer.from('\\u0001'.repeat(170_000))],
    ];
    for (const [label, path] of cases) {
      const stdin = Buffer.concat([Buffer.from('{"agentSocket":"/'), path, Buffer.from('"}')]);
      for (const command of ['ADD', 'DEL']) {
        const err = assertCleanCniRun(await fwd!.run({ ...attach, CNI_COMMAND: command }, stdin), label);
        assert.equal(err?.code, 7, `${command}: ${label}`);
        assert.match(err?.msg ?? '', /^config\.agentSocket /);
      }
    }
  });

  test('a DEL that cannot be spooled prints a valid error even when the spool dir fills every message', async () => {
    // No agent and a spool dir of 1/3 MiB of invalid bytes: the message and the details each quote
    // its 1 MiB decoded form; with the request under its 1 MiB limit, the largest error the
    // forwarder can print.
    const stdin = Buffer.concat([
      Buffer.from(`{"agentSocket":"${join(fwd!.dir, 'absent.sock')}","delSpoolDir":"/`),
      Buffer.alloc(Math.floor(MiB / 3) - 400, 0xff),
      Buffer.from('"}'),
    ]);
    const r = await fwd!.run({ ...attach, CNI_COMMAND: 'DEL' }, stdin);
    const err = assertCleanCniRun(r, 'huge spool dir');
    assert.equal(err?.code, 5);
    assert.ok((err?.msg.length ?? 0) > MiB / 3 - 400, 'the message names the whole dir');
    assert.match(err?.details ?? '', /^ENAMETOOLONG: /);
  });

  test('fuzzed near-JSON stdin is read exactly as JSON.parse reads it (VERSION echoes what it found)', async () => {
    const supported = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
    const significant = [
      '{',
      '}',
      '[',
      ']',
      '"',
      '\\',
      ',',
      ':',
      ' ',
      '\n',
      '0',
      '-',
      'e',
      '.',
      'u',
      'n',
      't',
      '\u0000',
    ];
    // A config holding the version among random JSON, then one to four bytes changed.
    const text = fc
      .tuple(fc.constantFrom(...supported, '2.0.0'), fc.jsonValue({ maxDepth: 3 }), fc.boolean())
      .map(([v, other, first]) => {
        const version = `"cniVersion":${JSON.stringify(v)}`;
        const rest = `"x":${JSON.stringify(other)}`;
        return Buffer.from(`{${first ? `${version},${rest}` : `${rest},${version}`}}`);
      });
    const edit = fc.record({
      at: fc.nat(),
      kind: fc.constantFrom('insert', 'replace', 'delete'),
      byte: fc.oneof(
        fc.constantFrom(...significant.map((c) => c.charCodeAt(0))),
        fc.integer({ min: 0, max: 255 }),
      ),
    });
    const mutated = fc.tuple(text, fc.array(edit, { minLength: 0, maxLength: 4 })).map(([buf, edits]) => {
      let b = buf;
      for (const e of edits) {
        const at = e.at % (b.length + 1);
        const byte = Buffer.from([e.byte]);
        if (e.kind === 'insert') b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at)]);
        else if (e.kind === 'replace') b = Buffer.concat([b.subarray(0, at), byte, b.subarray(at + 1)]);
        else b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
      }
      return b;
    });
    const expectedVersion = (stdin: Buffer): string => {
      try {
        const v: unknown = JSON.parse(stdin.toString('utf8'));
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
          const version = (v as Record<string, unknown>).cniVersion;
          if (typeof version === 'string' && supported.includes(version)) return version;
        }
      } catch {
        // not JSON: the default
      }
      return '1.0.0';
    };
    await fc.assert(
      fc.asyncProperty(mutated, async (stdin) => {
        const r = await fwd!.run({ CNI_COMMAND: 'VERSION' }, stdin);
        assertCleanRun(r, JSON.stringify(stdin.toString('latin1')));
        assert.equal(r.code, 0);
        assert.equal(
          JSON.parse(r.stdout.toString()).cniVersion,
          expectedVersion(stdin),
          stdin.toString('latin1'),
        );
      }),
      { numRuns: 200 },
    );
  });

  test('closed standard streams end the run cleanly', async () => {
    for (const redirect of ['<&-', '>&-', '<&- >&-']) {
      const r = await runForwarder(['/bin/sh', '-c', `exec "$0" ${redirect}`, fwd!.bin], attach, config(''));
      if (redirect === '<&-') {
        assert.equal(assertCleanCniRun(r, redirect)?.code, 6, 'no stdin: no config');
        continue;
      }
      assertCleanRun(r, redirect);
      assert.equal(r.stdout.length, 0);
      assert.equal(r.code, redirect === '>&-' ? 0 : 1, `${redirect}: the exit code still tells`);
    }
  });
});
