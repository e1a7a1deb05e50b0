// Builds the TypeScript forwarder (bin/vpcnet-js) as one esbuild file and execs it, so a
// bundle that needs anything beside itself fails here rather than on a node.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SPOOL_FILE_SUFFIX } from '../spool/format.ts';
import { bundleJsForwarder } from './testing/built-plugins.ts';
import { answerWith, startFakeAgent } from './testing/fake-agent.ts';

const dir = mkdtempSync(join(tmpdir(), 'vpcnet-bundle-'));
const bundle = join(dir, 'vpcnet-js');

before(() => bundleJsForwarder(bundle, ['--banner:js=#!/usr/bin/env node']));

after(() => rmSync(dir, { recursive: true, force: true }));

function execBundle(
  env: Record<string, string>,
  stdin: string,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    // Async spawn: the fake agent lives in this process and must keep serving meanwhile.
    const child = spawn(process.execPath, [bundle], { env, cwd: dir, stdio: ['pipe', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
    child.stdin.end(stdin);
  });
}

test('the bundle loads only the builtins a forwarder needs and no other file', () => {
  const text = readFileSync(bundle, 'utf8');
  const required = new Set([...text.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]));
  assert.ok(required.has('node:http'), 'the require scan sees the bundle imports');
  for (const name of required) {
    assert.ok(['node:http', 'node:fs', 'node:path', 'node:crypto'].includes(name ?? ''), `requires ${name}`);
  }
  assert.ok(statSync(bundle).size < 64 * 1024, `bundle is ${statSync(bundle).size} bytes`);
});

test('the bundled plugin forwards to the agent and prints its answer and exit code', async () => {
  const agent = await startFakeAgent(
    answerWith(3, '{"cniVersion":"1.0.0","code":3,"msg":"unknown container"}'),
  );
  try {
    const stdin = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'vpcnet',
      type: 'vpcnet',
      agentSocket: agent.socketPath,
    });
    const env = {
      CNI_COMMAND: 'CHECK',
      CNI_CONTAINERID: 'c1',
      CNI_IFNAME: 'eth0',
      CNI_NETNS: '/var/run/netns/x',
    };
    const out = await execBundle(env, stdin);
    assert.equal(out.code, 3);
    assert.equal(out.stdout, '{"cniVersion":"1.0.0","code":3,"msg":"unknown container"}');
    assert.deepEqual(JSON.parse(agent.requests[0]?.body ?? ''), { env, stdin });
  } finally {
    await agent.close();
  }
});

test('the bundled plugin answers VERSION with no agent running', async () => {
  const out = await execBundle({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.1.0"}');
  assert.equal(out.code, 0);
  assert.equal(JSON.parse(out.stdout).cniVersion, '1.1.0');
});

test('the bundled plugin spools a DEL when the agent is down and exits 0', async () => {
  const spool = join(dir, 'spool');
  const stdin = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'vpcnet',
    type: 'vpcnet',
    agentSocket: join(dir, 'absent.sock'),
    delSpoolDir: spool,
  });
  const out = await execBundle({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' }, stdin);
  assert.deepEqual(out, { code: 0, stdout: '' });
  const files = readdirSync(spool).filter((n) => n.endsWith(SPOOL_FILE_SUFFIX));
  assert.equal(files.length, 1);
  assert.equal(JSON.parse(readFileSync(join(spool, files[0] ?? ''), 'utf8')).env.CNI_CONTAINERID, 'c1');
});
