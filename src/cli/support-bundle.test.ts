// support-bundle against a socket answering a recorded state, with a state dir, spool, CNI conf
// dir and log of its own: what the archive holds, that failures are recorded, and no secrets.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { runCli } from './main.ts';
import { captureCli } from './testing/cli-capture.ts';
import { recordedState, serveFakeAgent } from './testing/fake-agent-socket.ts';

const run = promisify(execFile);
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function nodeDirs() {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnetctl-bundle-'));
  dirs.push(dir);
  const stateDir = join(dir, 'state');
  await mkdir(join(stateDir, 'del-spool'), { recursive: true });
  await writeFile(join(stateDir, 'ledger.json'), '{"version":2}\n');
  await writeFile(join(stateDir, 'ledger.json.journal'), '{"op":"put"}\n');
  await writeFile(join(stateDir, 'del-spool', 'c1-eth0.json'), '{}');
  await mkdir(join(dir, 'net.d'));
  await writeFile(join(dir, 'net.d', '10-vpcnet.conflist'), '{"name":"vpcnet"}\n');
  await mkdir(join(dir, 'logs', 'kube-system_vpcnet-abc', 'vpcnet'), { recursive: true });
  await writeFile(join(dir, 'logs', 'kube-system_vpcnet-abc', 'vpcnet', '0.log'), 'agent serving\n');
  return { dir, stateDir };
}

test('the bundle holds state, summaries, ledger, spool listing, CNI conf, dumps, logs, versions and errors.txt', async () => {
  const { dir, stateDir } = await nodeDirs();
  const socket = join(dir, 'agent.sock');
  const agent = await serveFakeAgent(socket, { healthz: 200, state: await recordedState('healthy-state') });
  const previous = process.env.AWS_SECRET_ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = 'ct-secret-marker-7f3a';
  try {
    const out = join(dir, 'bundle.tar.gz');
    const cli = captureCli();
    const code = await runCli(
      [
        'support-bundle',
        '-o',
        out,
        '--agent-socket',
        socket,
        '--state-dir',
        stateDir,
        '--cni-conf-dir',
        join(dir, 'net.d'),
        '--logs',
        join(dir, 'logs', 'kube-system_vpcnet-*', '*', '*.log'),
      ],
      cli,
    );
    assert.equal(code, 0);
    assert.equal((await stat(out)).mode & 0o777, 0o600, 'the bundle is root-only, as the state dir');
    assert.match(cli.stdout(), new RegExp(`^${out.replace(/[.]/g, '\\.')} \\(\\d+(\\.\\d)? (B|KiB)\\)\\n$`));
    const { stdout: listing } = await run('tar', ['-tzf', out]);
    const files = listing
      .split('\n')
      .filter((l) => l !== '' && !l.endsWith('/'))
      .map((l) => l.replace(/^vpcnet-support-[^/]+\//, ''));
    for (const f of [
      'versions.txt',
      'agent/state.json',
      'agent/status.txt',
      'agent/status.json',
      'agent/pods.txt',
      'ledger/ledger.json',
      'ledger/ledger.json.journal',
      'del-spool.txt',
      'cni-conf/10-vpcnet.conflist',
      'node/ip-link.json',
      'node/ip-addr.json',
      'node/ip-route-all.json',
      'node/ip-rule.json',
      'node/ip-neigh.json',
      'errors.txt',
    ])
      assert.ok(files.includes(f), `${f} missing from ${files.join(' ')}`);
    assert.ok(
      files.some((f) => f.endsWith('kube-system_vpcnet-abc/vpcnet/0.log')),
      'the log',
    );
    const x = join(dir, 'x');
    await mkdir(x);
    await run('tar', ['-xzf', out, '-C', x]);
    const { stdout: root } = await run('ls', [x]);
    const base = join(x, root.trim());
    assert.match(await readFile(join(base, 'del-spool.txt'), 'utf8'), /^c1-eth0\.json\t2 bytes/);
    assert.match(await readFile(join(base, 'agent', 'pods.txt'), 'utf8'), /default\/web-0/);
    // The recorded pods' namespaces do not exist here: their dumps failed, and errors.txt says so.
    assert.match(await readFile(join(base, 'errors.txt'), 'utf8'), /ip link in \/var\/run\/netns\/ct-web/);
    const { stdout: leaked } = await run('grep', ['-rl', 'ct-secret-marker-7f3a', base]).catch(() => ({
      stdout: '',
    }));
    assert.equal(leaked, '', 'the environment went into the bundle');
  } finally {
    if (previous === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    else process.env.AWS_SECRET_ACCESS_KEY = previous;
    await agent.close();
  }
});

test('with no agent and no state dir, the bundle is still written and errors.txt names what failed', async () => {
  const { dir } = await nodeDirs();
  const out = join(dir, 'down.tar.gz');
  const cli = captureCli();
  const code = await runCli(
    [
      'support-bundle',
      '-o',
      out,
      '--agent-socket',
      join(dir, 'no.sock'),
      '--state-dir',
      join(dir, 'missing'),
      '--cni-conf-dir',
      join(dir, 'missing-net.d'),
      '--logs',
      join(dir, 'nothing-*.log'),
    ],
    cli,
  );
  assert.equal(code, 0);
  assert.match(cli.stderr(), /could not be collected/);
  const { stdout } = await run('tar', ['-xzOf', out, '--wildcards', '*/errors.txt']);
  for (const what of ['agent state', 'ledger files', 'DEL spool listing', 'CNI conf dir', 'agent logs'])
    assert.match(stdout, new RegExp(`^${what}: `, 'm'));
  // The status summary of a node without agent is still there: it says the agent is down.
  const { stdout: status } = await run('tar', ['-xzOf', out, '--wildcards', '*/agent/status.txt']);
  assert.match(status, /DOWN/);
});
