// What the native forwarder answers without the agent, exactly as the TypeScript one does: VERSION,
// stdin that is not a JSON object, an unreachable agent (ADD/CHECK/GC/STATUS fail, DEL is spooled)
// and a spool it cannot write; and the constants both take from src/cni, held to one value.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CNI_ERR_DECODE,
  CNI_ERR_INTERNAL,
  CNI_ERR_INVALID_NETCONF,
  CNI_ERR_IO,
  CNI_ERR_PLUGIN_NOT_AVAILABLE,
  CNI_ERR_TRY_AGAIN_LATER,
} from '../cni/errors.ts';
import {
  AGENT_CNI_PATH,
  DEFAULT_AGENT_SOCKET,
  DEFAULT_CNI_VERSION,
  MAX_REQUEST_BYTES,
  PLUGIN_VERSION,
  SUPPORTED_CNI_VERSIONS,
} from '../cni/wire.ts';
import { DEFAULT_DEL_SPOOL_DIR, SPOOL_FILE_SUFFIX, SPOOL_TEMP_PREFIX } from '../spool/format.ts';
import { PLUGIN_USAGE } from './main.ts';
import {
  attachEnv,
  builtPlugins,
  errorOf,
  nativeDir,
  netconf,
  type Plugin,
} from './testing/built-plugins.ts';

const plugins = builtPlugins();
const { dir, exec, same } = plugins;

test('the C header wire.h carries the constants of src/cni/wire.ts (the request limit too) and the error codes of errors.ts', () => {
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
    CNI_ERR_INVALID_NETCONF,
    CNI_ERR_TRY_AGAIN_LATER,
    CNI_ERR_PLUGIN_NOT_AVAILABLE,
    CNI_ERR_INTERNAL,
    MAX_REQUEST_BYTES,
  })) {
    assert.ok(c.includes(`#define ${name} ${value}\n`), name);
  }
  assert.ok(
    c.includes(`{${SUPPORTED_CNI_VERSIONS.map((v) => `"${v}"`).join(', ')}}`),
    'SUPPORTED_CNI_VERSIONS',
  );
  assert.ok(c.includes(`#define VPCNET_VERSION "${PLUGIN_VERSION}"`), 'VPCNET_VERSION');
});

test('--version and --help answer alike in both forwarders without reading stdin; any other argument is exit 2', async () => {
  const { nativeBin, jsBin } = plugins;
  const run = (plugin: Plugin, args: string[]) =>
    plugins.execFileWithStdin(
      plugin === 'native' ? [nativeBin, ...args] : [process.execPath, jsBin, ...args],
      {},
      '',
    );
  for (const args of [['--version'], ['--help'], ['-h'], ['--bogus'], ['ADD', 'x']]) {
    const native = await run('native', args);
    const js = await run('js', args);
    assert.equal(native.code, js.code, `${args.join(' ')}: exit code`);
    assert.equal(native.stdout.toString(), js.stdout.toString(), `${args.join(' ')}: stdout`);
  }
  const version = await run('native', ['--version']);
  assert.equal(version.code, 0);
  assert.equal(
    version.stdout.toString(),
    `vpcnet CNI plugin ${PLUGIN_VERSION} (CNI spec ${SUPPORTED_CNI_VERSIONS.join(', ')})\n`,
  );
  assert.equal((await run('native', ['--help'])).stdout.toString(), PLUGIN_USAGE);
  assert.equal((await run('native', ['--bogus'])).code, 2);
  assert.equal((await run('js', ['--bogus'])).code, 2);
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

test('an agentSocket no socket can have (a NUL, over 107 bytes) fails with code 7 for every command, identically', async () => {
  const spool = join(dir, 'spool-bad-socket');
  const fits = `/${'s'.repeat(106)}`; // 107 bytes: a path a socket can have, if absent
  const paths: Array<[string, number]> = [
    [fits, 11],
    [`${fits}s`, 7],
    [`/${'é'.repeat(60)}`, 7], // 60 characters, 121 bytes
    [`/${'\ud800'.repeat(40)}`, 7], // lone surrogates: 3 bytes each once encoded
    [`/${'x'.repeat(300)}`, 7],
    [join(dir, 'absent.sock\u0000tail'), 7],
  ];
  for (const [socket, code] of paths) {
    for (const command of ['ADD', 'DEL', 'STATUS']) {
      const stdin = netconf({ agentSocket: socket, delSpoolDir: spool });
      const out = await same({ ...attachEnv, CNI_COMMAND: command }, stdin, `${command} ${socket.length}`);
      if (command === 'DEL' && code === 11) {
        assert.equal(out.code, 0, 'a path that fits is spooled as usual');
        continue;
      }
      assert.equal(out.code, 1);
      const err = errorOf(out);
      assert.equal(err.code, command === 'STATUS' && code === 11 ? 50 : code, `${command} ${socket}`);
      if (code === 7) assert.match(err.msg, /^config\.agentSocket (contains a NUL byte|is \d+ bytes long)/);
    }
  }
  assert.equal(
    readdirSync(spool).length,
    2,
    'only the DEL with a usable socket path was spooled, once by each',
  );
});

test('a DEL to spool in a delSpoolDir holding a NUL fails with code 7 and writes nothing, identically', async () => {
  const spool = join(dir, 'spool-nul');
  const stdin = netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: `${spool}\u0000/elsewhere` });
  const out = await same({ ...attachEnv, CNI_COMMAND: 'DEL' }, stdin, 'spool dir with NUL');
  assert.equal(out.code, 1);
  assert.equal(errorOf(out).code, 7);
  assert.equal(errorOf(out).msg, 'config.delSpoolDir contains a NUL byte');
  assert.throws(() => statSync(spool), /ENOENT/, 'nothing was created at the path before the NUL');
});
