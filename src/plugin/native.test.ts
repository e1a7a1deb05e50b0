// The native forwarder (src/plugin/native/*.c, shipped as bin/vpcnet) must behave exactly
// as the TypeScript one (main.ts + forward.ts + spool.ts, shipped as bin/vpcnet-js): each
// scenario runs both, freshly built here, and compares exit codes and stdout bytes. It also
// prints what the native binary buys: process start and a forwarded CHECK, p50 of 30 runs.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CNI_ERR_DECODE,
  CNI_ERR_INTERNAL,
  CNI_ERR_IO,
  CNI_ERR_PLUGIN_NOT_AVAILABLE,
  CNI_ERR_TRY_AGAIN_LATER,
} from '../cni/errors.ts';
import {
  AGENT_CNI_PATH,
  DEFAULT_AGENT_SOCKET,
  DEFAULT_CNI_VERSION,
  DEFAULT_DEL_SPOOL_DIR,
  SPOOL_FILE_SUFFIX,
  SPOOL_TEMP_PREFIX,
  SUPPORTED_CNI_VERSIONS,
} from '../cni/wire.ts';
import { answerWith, type FakeAgentReply, startFakeAgent } from './testing/fake-agent.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const nativeDir = join(repoRoot, 'src/plugin/native');
const dir = mkdtempSync(join(tmpdir(), 'vpcnet-native-'));
const nativeBin = join(dir, 'vpcnet');
const jsBin = join(dir, 'vpcnet-js');
const run = promisify(execFile);

before(async () => {
  const sources = readdirSync(nativeDir)
    .filter((n) => n.endsWith('.c'))
    .map((n) => join(nativeDir, n));
  const flags = ['-O2', '-s', '-Wall', '-Wextra', '-Werror', '-o', nativeBin, ...sources];
  await run('cc', ['-static', ...flags]).catch(() => run('cc', flags));
  await run(
    join(repoRoot, 'node_modules/.bin/esbuild'),
    [
      join(repoRoot, 'src/bin/vpcnet-js.ts'),
      '--bundle',
      '--platform=node',
      '--target=node20',
      '--format=cjs',
      '--minify',
      `--outfile=${jsBin}`,
      '--log-level=warning',
    ],
    { cwd: repoRoot },
  );
});

after(() => rmSync(dir, { recursive: true, force: true }));

interface Outcome {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly ms: number;
}

type Plugin = 'native' | 'js';

function exec(plugin: Plugin, env: Record<string, string>, stdin: string | Buffer): Promise<Outcome> {
  return execFileWithStdin(plugin === 'native' ? [nativeBin] : [process.execPath, jsBin], env, stdin);
}

function execFileWithStdin(
  argv: string[],
  env: Record<string, string>,
  stdin: string | Buffer,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    // Async spawn: the fake agent lives in this process and must keep serving meanwhile.
    const child = spawn(argv[0] ?? '', argv.slice(1), { env, cwd: dir, stdio: ['pipe', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(chunks), ms: performance.now() - start }),
    );
    child.stdin.on('error', () => {}); // VERSION may exit before reading a large stdin
    child.stdin.end(stdin);
  });
}

/** Runs both plugins and asserts they exit and print the same; returns the native outcome. */
async function same(env: Record<string, string>, stdin: string | Buffer, label: string): Promise<Outcome> {
  const native = await exec('native', env, stdin);
  const js = await exec('js', env, stdin);
  assert.equal(native.code, js.code, `${label}: exit code`);
  assert.equal(
    native.stdout.toString('hex'),
    js.stdout.toString('hex'),
    `${label}: stdout bytes\n native: ${native.stdout}\n js:     ${js.stdout}`,
  );
  return native;
}

const attachEnv = {
  CNI_CONTAINERID: '30c8f1e2',
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/p1',
  CNI_PATH: '/opt/cni/bin',
};

const netconf = (extra: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet', ...extra });

function errorOf(out: Outcome): { cniVersion: string; code: number; msg: string; details?: string } {
  return JSON.parse(out.stdout.toString('utf8'));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

test('the C header wire.h carries the constants of src/cni/wire.ts and the error codes of errors.ts', () => {
  const c = readFileSync(join(nativeDir, 'wire.h'), 'utf8');
  for (const [name, value] of Object.entries({
    AGENT_CNI_PATH,
    DEFAULT_AGENT_SOCKET,
    DEFAULT_CNI_VERSION,
    DEFAULT_DEL_SPOOL_DIR,
    SPOOL_FILE_SUFFIX,
    SPOOL_TEMP_PREFIX,
  })) {
    assert.ok(c.includes(`#define ${name} "${value}"`), name);
  }
  for (const [name, value] of Object.entries({
    CNI_ERR_IO,
    CNI_ERR_DECODE,
    CNI_ERR_TRY_AGAIN_LATER,
    CNI_ERR_PLUGIN_NOT_AVAILABLE,
    CNI_ERR_INTERNAL,
  })) {
    assert.ok(c.includes(`#define ${name} ${value}\n`), name);
  }
  assert.ok(
    c.includes(`{${SUPPORTED_CNI_VERSIONS.map((v) => `"${v}"`).join(', ')}}`),
    'SUPPORTED_CNI_VERSIONS',
  );
});

test('both forward only CNI_* env and stdin byte-exact, and print the agent stdout and exit code', async () => {
  // Control characters, quotes, backslashes, non-ASCII, an emoji, U+2028 and DEL: every escaping rule.
  const tricky = 'q"uo\\te\n\ttab\u0001\u001f\u007f é ü 東京 😀 \u2028 /';
  const stdout = `{"cniVersion":"1.0.0","msg":"${tricky.replace(/["\\]/g, '')}","nul":"\u0000","lone":"\ud800x"}`;
  const agent = await startFakeAgent(answerWith(3, stdout));
  try {
    const stdin = `${netconf({ agentSocket: agent.socketPath, note: tricky })}\n`;
    const env = {
      ...attachEnv,
      CNI_COMMAND: 'ADD',
      CNI_ARGS: `K8S_POD_NAME=${tricky}`,
      HOME: '/root',
      PATH: '/usr/bin',
    };
    const out = await same(env, stdin, 'forward');
    assert.equal(out.code, 3);
    assert.equal(out.stdout.toString('utf8'), stdout.replace('\ud800', '\ufffd'));
    assert.equal(agent.requests.length, 2);
    const { HOME: _h, PATH: _p, ...cniOnly } = env;
    const expected = JSON.stringify({ env: cniOnly, stdin });
    for (const r of agent.requests) {
      assert.equal(r.body, expected, 'the body is JSON.stringify({env, stdin})');
      assert.equal(r.method, 'POST');
      assert.equal(r.url, '/v1/cni');
      assert.equal(r.contentType, 'application/json');
    }
  } finally {
    await agent.close();
  }
});

test('both decode invalid UTF-8 on stdin the same way (U+FFFD per WHATWG)', async () => {
  const agent = await startFakeAgent(answerWith(0, 'ok'));
  try {
    const bad = Buffer.from([
      0x41, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0xe2, 0x82, 0xc0, 0x80, 0xf4, 0x90, 0x80, 0xff, 0xc3,
    ]);
    const stdin = Buffer.concat([
      Buffer.from(`{"agentSocket":"${agent.socketPath}","x":"`),
      bad,
      Buffer.from('"}'),
    ]);
    await same({ CNI_COMMAND: 'ADD' }, stdin, 'invalid utf-8');
    assert.equal(agent.requests[0]?.body, agent.requests[1]?.body);
    assert.ok(agent.requests[0]?.body.includes('A\ufffd\ufffd\ufffd\ufffd'), agent.requests[0]?.body);
  } finally {
    await agent.close();
  }
});

test('VERSION is answered locally and identically for any stdin', async () => {
  const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
  const stdins = [
    ...[...SUPPORTED_CNI_VERSIONS, '0.2.0', '2.0.0', ''].map((v) => JSON.stringify({ cniVersion: v })),
    '',
    'garbage',
    '{"cniVersion":1}',
    '{"cniVersion":"0.4.0"} trailing',
    '{"cniVersion":"0.4.0",}',
    '{"a":{"cniVersion":"0.3.0"},"b":["x",{"cniVersion":"0.3.1"}]}',
    '{"cniVersion":"0.3.0","cniVersion":"0.4.0"}',
    '{"cniVersion":"0.3.0","cniVersion":null}',
    '{"cni\\u0056ersion":"0.3.1"}',
    '{"cniVersion":"0.3.\\u0031"}',
    `{"x":${deep},"cniVersion":"0.3.0"}`,
    '["0.3.0"]',
    '\ufeff{"cniVersion":"0.3.0"}',
    ' \t\r\n{"n":-0.5e+10,"t":true,"f":false,"z":null,"s":"\\"\\\\\\/\\b\\f\\n\\r\\t","cniVersion":"1.1.0"} \n',
    '{"n":01,"cniVersion":"1.1.0"}',
    '{"n":1.,"cniVersion":"1.1.0"}',
    '{"s":"\\x","cniVersion":"1.1.0"}',
    '{"s":"tab\there","cniVersion":"1.1.0"}',
    '{"s":"\\u12g4","cniVersion":"1.1.0"}',
    '{"cniVersion":"1.1.0"',
  ];
  for (const stdin of stdins) {
    const out = await same(
      { CNI_COMMAND: 'VERSION' },
      stdin,
      `VERSION ${JSON.stringify(stdin.slice(0, 60))}`,
    );
    assert.equal(out.code, 0);
  }
  const answer = await exec('native', { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}');
  assert.deepEqual(JSON.parse(answer.stdout.toString()), {
    cniVersion: '0.4.0',
    supportedVersions: SUPPORTED_CNI_VERSIONS,
  });
});

test('a stdin that is not a JSON object fails with code 6 for every other command', async () => {
  for (const stdin of ['', 'garbage', '[]', '"s"', '{"cniVersion":"0.4.0",}', '{"a":1} {}']) {
    const out = await same({ ...attachEnv, CNI_COMMAND: 'ADD' }, stdin, `ADD ${JSON.stringify(stdin)}`);
    assert.equal(out.code, 1);
    assert.equal(errorOf(out).code, 6);
  }
});

test('with no agent, ADD/CHECK/GC fail with 11 and STATUS with 50, with the same message', async () => {
  const absent = join(dir, 'absent.sock');
  const notASocket = join(dir, 'plain-file');
  writeFileSync(notASocket, '');
  for (const socket of [absent, notASocket]) {
    for (const [command, code] of [
      ['ADD', 11],
      ['CHECK', 11],
      ['GC', 11],
      ['STATUS', 50],
    ] as const) {
      const stdin = JSON.stringify({ cniVersion: '0.4.0', agentSocket: socket });
      const out = await same({ ...attachEnv, CNI_COMMAND: command }, stdin, `${command} ${socket}`);
      assert.equal(out.code, 1);
      const err = errorOf(out);
      assert.equal(err.code, code);
      assert.equal(err.cniVersion, '0.4.0');
      assert.match(err.msg, /^vpcnet agent not reachable at .*: connect (ENOENT|ECONNREFUSED) /);
    }
  }
});

test('with no agent, DEL is spooled by both in the same format, sorting in arrival order', async () => {
  const spool = join(dir, 'spool-order', 'nested');
  const stdin = netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: spool });
  const order: Array<[Plugin, string]> = [
    ['native', 'c1'],
    ['js', 'c2'],
    ['native', 'c3'],
    ['native', 'c4'],
    ['js', 'c5'],
  ];
  for (const [plugin, id] of order) {
    const out = await exec(
      plugin,
      { ...attachEnv, CNI_CONTAINERID: id, CNI_COMMAND: 'DEL', HOME: '/root' },
      stdin,
    );
    assert.deepEqual({ code: out.code, stdout: out.stdout.toString() }, { code: 0, stdout: '' }, plugin);
  }
  const names = readdirSync(spool).sort();
  assert.equal(names.length, order.length, 'no temp files left behind');
  assert.equal(statSync(spool).mode & 0o777, 0o700);
  for (const [k, name] of names.entries()) {
    assert.match(name, /^\d{15}-\d{20}-\d+-[0-9a-f]{8}\.del\.json$/);
    assert.equal(statSync(join(spool, name)).mode & 0o777, 0o600);
    const env = { ...attachEnv, CNI_CONTAINERID: order[k]?.[1] ?? '', CNI_COMMAND: 'DEL' };
    assert.equal(
      readFileSync(join(spool, name), 'utf8'),
      JSON.stringify({ env, stdin }),
      `file ${k} (${order[k]?.[0]})`,
    );
  }
});

test('a DEL that cannot be spooled fails with code 5 naming the dir, identically', async () => {
  const file = join(dir, 'not-a-dir');
  writeFileSync(file, '');
  for (const spool of [join(file, 'spool'), file]) {
    const stdin = netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: spool });
    const out = await same({ ...attachEnv, CNI_COMMAND: 'DEL' }, stdin, `spool ${spool}`);
    assert.equal(out.code, 1);
    assert.equal(errorOf(out).code, 5);
    assert.equal(errorOf(out).msg, `cannot spool DEL in ${spool}`);
  }
});

test('an agent that answers badly makes both fail with code 100 and the same details', async () => {
  const longBody = `${'x'.repeat(199)}😀 and more`;
  const replies: Array<[string, FakeAgentReply]> = [
    ['HTTP 500', () => ({ status: 500, body: 'agent exploded' })],
    ['HTTP 404 long', () => ({ status: 404, body: longBody })],
    ['garbage', () => ({ status: 200, body: 'not json at all' })],
    ['garbage cut in a surrogate pair', () => ({ status: 200, body: longBody })],
    ['empty', () => ({ status: 200, body: '' })],
    ['not an object', () => ({ status: 200, body: '42' })],
    ['array', () => ({ status: 200, body: '[0,"x"]' })],
    ['exit code 256', () => ({ status: 200, body: '{"exitCode":256,"stdout":""}' })],
    ['exit code 1.5', () => ({ status: 200, body: '{"exitCode":1.5,"stdout":""}' })],
    ['exit code string', () => ({ status: 200, body: '{"exitCode":"0","stdout":""}' })],
    ['stdout not a string', () => ({ status: 200, body: '{"exitCode":0,"stdout":null}' })],
  ];
  for (const [label, reply] of replies) {
    const agent = await startFakeAgent(reply);
    try {
      const out = await same(
        { ...attachEnv, CNI_COMMAND: 'ADD' },
        netconf({ agentSocket: agent.socketPath }),
        label,
      );
      assert.equal(out.code, 1, label);
      assert.equal(errorOf(out).code, 100, label);
    } finally {
      await agent.close();
    }
  }
});

test('odd but valid answers pass through the same: integral floats, duplicate keys, extra fields', async () => {
  const bodies = [
    '{"exitCode":1.0,"stdout":"one"}',
    '{"exitCode":2e0,"stdout":"\\ud83d\\ude00 \\u00e9 \\ud800 \\u0000"}',
    '{"exitCode":9,"stdout":"first","stdout":"last","extra":{"exitCode":7}}',
    '{"exitCode":-0,"stdout":""}',
  ];
  for (const body of bodies) {
    const agent = await startFakeAgent(() => ({ status: 200, body }));
    try {
      await same({ CNI_COMMAND: 'CHECK' }, netconf({ agentSocket: agent.socketPath }), body);
    } finally {
      await agent.close();
    }
  }
});

test('a chunked answer is read the same way', async () => {
  const sock = join(dir, 'chunked.sock');
  const server: Server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"exitCode":4,');
      setTimeout(() => res.end('"stdout":"chunked é"}'), 5);
    });
  });
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  try {
    const out = await same({ CNI_COMMAND: 'ADD' }, netconf({ agentSocket: sock }), 'chunked');
    assert.equal(out.code, 4);
    assert.equal(out.stdout.toString(), 'chunked é');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an agent that hangs up without answering counts as unreachable for both', async () => {
  const sock = join(dir, 'hangup.sock');
  const server = createNetServer((c) => c.once('data', () => c.destroy()));
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  try {
    for (const plugin of ['native', 'js'] as const) {
      const out = await exec(plugin, { CNI_COMMAND: 'ADD' }, netconf({ agentSocket: sock }));
      assert.equal(out.code, 1, plugin);
      assert.equal(errorOf(out).code, 11, plugin);
    }
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('timing: process start (VERSION) and a forwarded CHECK, p50 of 30', async (t) => {
  const runs = 30;
  const versionP50 = async (argv: string[]): Promise<number> => {
    const xs: number[] = [];
    for (let i = 0; i < runs; i++) {
      const out = await execFileWithStdin(argv, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
      assert.equal(out.code, 0, argv[0]);
      xs.push(out.ms);
    }
    return median(xs);
  };
  const bridge = '/usr/lib/cni/bridge';
  const lines = [
    `VERSION p50 (ms): native ${(await versionP50([nativeBin])).toFixed(2)}, js ${(await versionP50([process.execPath, jsBin])).toFixed(2)}` +
      (existsSync(bridge) ? `, reference ${bridge} ${(await versionP50([bridge])).toFixed(2)}` : ''),
  ];
  const agent = await startFakeAgent(answerWith(0, '{"cniVersion":"1.0.0"}'));
  try {
    const stdin = netconf({ agentSocket: agent.socketPath });
    const checkP50 = async (plugin: Plugin): Promise<number> => {
      const xs: number[] = [];
      for (let i = 0; i < runs; i++)
        xs.push((await exec(plugin, { ...attachEnv, CNI_COMMAND: 'CHECK' }, stdin)).ms);
      return median(xs);
    };
    lines.push(
      `forwarded CHECK p50 (ms): native ${(await checkP50('native')).toFixed(2)}, js ${(await checkP50('js')).toFixed(2)}`,
    );
    assert.equal(agent.requests.length, 2 * runs);
  } finally {
    await agent.close();
  }
  for (const line of lines) t.diagnostic(line);
});
