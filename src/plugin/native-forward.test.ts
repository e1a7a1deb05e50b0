// With an agent to talk to, the native forwarder behaves exactly as the TypeScript one (its
// executable specification): what it sends, how it decodes stdin, and how it reads good, odd, bad,
// chunked or missing answers. Each scenario runs both and compares exit codes and stdout bytes.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { attachEnv, builtPlugins, errorOf, netconf } from './testing/built-plugins.ts';
import { answerWith, type FakeAgentReply, startFakeAgent } from './testing/fake-agent.ts';

const { dir, exec, same } = builtPlugins();

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

// (A 413 is not printed as it is: it is the request limit's own error, native-limit.test.ts.)
test('a refusal worded as a CNI error (a non-200 ForwardedResponse that fails) is printed as it is by both', async () => {
  const cniError = '{"cniVersion":"1.0.0","code":6,"msg":"the vpcnet agent cannot decode the request"}\n';
  const replies: Array<[string, FakeAgentReply, number, string | undefined]> = [
    [
      '400 worded',
      () => ({ status: 400, body: JSON.stringify({ exitCode: 1, stdout: cniError }) }),
      1,
      cniError,
    ],
    ['400', () => ({ status: 400, body: JSON.stringify({ exitCode: 7, stdout: 'seven' }) }), 7, 'seven'],
    // Not a refusal: success under an error status, or no ForwardedResponse at all.
    ['500 claiming success', () => ({ status: 500, body: '{"exitCode":0,"stdout":"ok"}' }), 1, undefined],
    ['503 garbage', () => ({ status: 503, body: 'busy' }), 1, undefined],
  ];
  for (const [label, reply, code, stdout] of replies) {
    const agent = await startFakeAgent(reply);
    try {
      const out = await same(
        { ...attachEnv, CNI_COMMAND: 'ADD' },
        netconf({ agentSocket: agent.socketPath }),
        label,
      );
      assert.equal(out.code, code, label);
      if (stdout !== undefined) assert.equal(out.stdout.toString(), stdout, label);
      else assert.match(errorOf(out).details ?? '', /answered badly: HTTP 5\d\d: /, label);
    } finally {
      await agent.close();
    }
  }
});

test('an answer body over 1 MiB fails both with code 100; one of exactly 1 MiB passes through', async () => {
  const answerOf = (bodyBytes: number) => {
    const frame = JSON.stringify({ exitCode: 0, stdout: '' });
    return JSON.stringify({ exitCode: 0, stdout: 'z'.repeat(bodyBytes - frame.length) });
  };
  const sock = join(dir, 'huge.sock');
  let body = '';
  let chunked = false;
  const server: Server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (chunked) {
        res.writeHead(200);
        for (let at = 0; at < body.length; at += 4096) res.write(body.slice(at, at + 4096));
        res.end();
      } else {
        res.writeHead(200, { 'content-length': Buffer.byteLength(body) }).end(body);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  try {
    for (chunked of [false, true]) {
      body = answerOf(1 << 20);
      const fits = await same({ CNI_COMMAND: 'ADD' }, netconf({ agentSocket: sock }), `1 MiB ${chunked}`);
      assert.equal(fits.code, 0);
      assert.equal(fits.stdout.length, (1 << 20) - JSON.stringify({ exitCode: 0, stdout: '' }).length);
      body = answerOf(4 << 20);
      const over = await same({ CNI_COMMAND: 'ADD' }, netconf({ agentSocket: sock }), `4 MiB ${chunked}`);
      assert.equal(over.code, 1);
      assert.equal(errorOf(over).code, 100);
      assert.match(errorOf(over).details ?? '', /answered badly: response larger than 1048576 bytes$/);
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
