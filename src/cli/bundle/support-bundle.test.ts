// support-bundle against a socket answering a recorded state, with a state dir, spool, CNI conf
// dir and log of its own: what the archive holds, that failures are recorded, that it is its
// owner's alone from its first byte, and that no secret goes into it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { runCli } from '../main.ts';
import { captureCli } from '../testing/cli-capture.ts';
import { recordedState, serveFakeAgent } from '../testing/fake-agent-socket.ts';

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
  const paths: BundlePaths = {
    socket: join(dir, 'no.sock'),
    stateDir,
    confDir: join(dir, 'net.d'),
    logs: join(dir, 'logs', 'kube-system_vpcnet-*', '*', '*.log'),
  };
  return { dir, paths };
}

interface BundlePaths {
  readonly socket: string;
  readonly stateDir: string;
  readonly confDir: string;
  readonly logs: string;
}

/** Runs support-bundle: its exit code and output. */
async function bundleOf(out: string, p: BundlePaths) {
  const cli = captureCli();
  const code = await runCli(
    [
      'support-bundle',
      '-o',
      out,
      '--agent-socket',
      p.socket,
      '--state-dir',
      p.stateDir,
      '--cni-conf-dir',
      p.confDir,
      '--logs',
      p.logs,
    ],
    cli,
  );
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

test('the bundle holds state, summaries, ledger, spool listing, CNI conf, dumps, logs, versions and errors.txt', async () => {
  const { dir, paths } = await nodeDirs();
  const socket = join(dir, 'agent.sock');
  const agent = await serveFakeAgent(socket, { healthz: 200, state: await recordedState('healthy-state') });
  const previous = process.env.AWS_SECRET_ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = 'ct-secret-marker-7f3a';
  try {
    const out = join(dir, 'bundle.tar.gz');
    const r = await bundleOf(out, { ...paths, socket });
    assert.equal(r.code, 0);
    assert.equal((await stat(out)).mode & 0o777, 0o600, 'the bundle is root-only, as the state dir');
    assert.match(r.stdout, new RegExp(`^${out.replace(/[.]/g, '\\.')} \\(\\d+(\\.\\d)? (B|KiB)\\)\\n$`));
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
      'cni-conf-dir.txt',
      'node/ip-link.json',
      'node/ip-addr.json',
      'node/ip-route-all.json',
      'node/ip-rule.json',
      'node/ip-neigh.json',
      'errors.txt',
      'redactions.txt',
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
  const r = await bundleOf(out, {
    socket: join(dir, 'no.sock'),
    stateDir: join(dir, 'missing'),
    confDir: join(dir, 'missing-net.d'),
    logs: join(dir, 'nothing-*.log'),
  });
  assert.equal(r.code, 0);
  assert.match(r.stderr, /could not be collected/);
  const { stdout } = await run('tar', ['-xzOf', out, '--wildcards', '*/errors.txt']);
  for (const what of ['agent state', 'ledger files', 'DEL spool listing', 'CNI conf dir', 'agent logs'])
    assert.match(stdout, new RegExp(`^${what}: `, 'm'));
  // The status summary of a node without agent is still there: it says the agent is down.
  const { stdout: status } = await run('tar', ['-xzOf', out, '--wildcards', '*/agent/status.txt']);
  assert.match(status, /DOWN/);
});

/** The bundle unpacked: the directory holding its files. */
async function unpacked(dir: string, out: string): Promise<string> {
  const x = await mkdtemp(join(dir, 'x-'));
  await run('tar', ['-xzf', out, '-C', x]);
  const [root] = await readdir(x);
  assert.ok(root !== undefined, 'the bundle is empty');
  return join(x, root);
}

test('the bundle is its owner’s alone while it is written: the output is never wider than 0600, the work dir never wider than 0700', async () => {
  const { dir, paths } = await nodeDirs();
  // A log of incompressible bytes keeps tar and gzip busy long enough to be watched at work.
  await writeFile(join(dir, 'logs', 'kube-system_vpcnet-abc', 'vpcnet', '1.log'), randomBytes(6 << 20));
  const work = join(dir, 'tmp');
  await mkdir(work);
  const out = join(dir, 'watched.tar.gz');
  // The usual umask: a file a tool creates with 0666 would be world-readable.
  const umask = process.umask(0o022);
  const previousTmp = process.env.TMPDIR;
  process.env.TMPDIR = work;
  const outModes = new Set<number>();
  const workModes = new Set<number>();
  let outSeen = 0;
  let writing = true;
  const watch = (async () => {
    while (writing) {
      const st = await lstat(out).catch(() => undefined);
      if (st !== undefined) {
        outSeen++;
        outModes.add(st.mode & 0o777);
      }
      for (const n of await readdir(work).catch(() => [] as string[]))
        await lstat(join(work, n))
          .then((w) => workModes.add(w.mode & 0o777))
          .catch(() => {});
    }
  })();
  try {
    const r = await bundleOf(out, paths);
    assert.equal(r.code, 0, r.stderr);
  } finally {
    writing = false;
    await watch;
    process.umask(umask);
    if (previousTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previousTmp;
  }
  assert.ok(outSeen > 10, `the output was watched while written (${outSeen} looks)`);
  assert.deepEqual([...outModes], [0o600], 'modes the output had while it was written');
  assert.ok(workModes.size > 0, 'the work dir was watched');
  assert.deepEqual([...workModes], [0o700], 'modes the work dir had');
  assert.deepEqual(await readdir(work), [], 'the work dir is removed');
  assert.ok((await stat(out)).size > 6 << 20, 'the whole log went in');
});

test('an output path that exists is refused, never overwritten or followed, and nothing is written', async () => {
  const { dir, paths } = await nodeDirs();
  const existing = join(dir, 'existing.tar.gz');
  await writeFile(existing, 'not yours', { mode: 0o644 });
  const target = join(dir, 'planted-target');
  const link = join(dir, 'link.tar.gz');
  await symlink(target, link);
  for (const out of [existing, link]) {
    const r = await bundleOf(out, paths);
    assert.equal(r.code, 2, out);
    assert.match(r.stderr, new RegExp(`${out.replace(/[.]/g, '\\.')} exists; .*never overwrites or follows`));
    assert.equal(r.stdout, '');
  }
  assert.equal(await readFile(existing, 'utf8'), 'not yours');
  assert.equal((await stat(existing)).mode & 0o777, 0o644);
  assert.equal(await stat(target).catch(() => 'absent'), 'absent', 'the link was followed');
});

test("of the CNI conf dir only vpcnet's conflist is collected: another plugin's kubeconfig and conflist stay on the node", async () => {
  const { dir, paths } = await nodeDirs();
  const netd = join(dir, 'net.d');
  await mkdir(join(netd, 'calico-kubeconfig.d'));
  await writeFile(
    join(netd, 'calico-kubeconfig'),
    'users:\n- name: calico\n  user:\n    token: calico-sa-token-5e1f\n',
  );
  await writeFile(
    join(netd, '05-calico.conflist'),
    '{"name":"k8s-pod-network","note":"calico-conf-marker"}\n',
  );
  await symlink(join(netd, 'calico-kubeconfig'), join(netd, '99-link.conflist'));
  const out = join(dir, 'conf.tar.gz');
  assert.equal((await bundleOf(out, paths)).code, 0);
  const base = await unpacked(dir, out);
  assert.deepEqual(await readdir(join(base, 'cni-conf')), ['10-vpcnet.conflist']);
  assert.equal(await readFile(join(base, 'cni-conf', '10-vpcnet.conflist'), 'utf8'), '{"name":"vpcnet"}\n');
  for (const marker of ['calico-sa-token-5e1f', 'calico-conf-marker']) {
    const { stdout } = await run('grep', ['-rl', marker, base]).catch(() => ({ stdout: '' }));
    assert.equal(stdout, '', `${marker} went into the bundle`);
  }
  // The names are listed (which conflist sorts first decides what a runtime uses), not the contents.
  const listing = await readFile(join(base, 'cni-conf-dir.txt'), 'utf8');
  assert.match(listing, /^05-calico\.conflist\tfile\t\d+ bytes\tnot collected$/m);
  assert.match(listing, /^10-vpcnet\.conflist\tfile\t\d+ bytes\tcollected$/m);
  assert.match(listing, /^99-link\.conflist\tlink\t\d+ bytes\tnot collected$/m);
  assert.match(listing, /^calico-kubeconfig\tfile\t\d+ bytes\tnot collected$/m);
  assert.match(listing, /^calico-kubeconfig\.d\tother\t/m);
});

test('token-like values in what is collected are redacted, and redactions.txt counts them per file', async () => {
  const { dir, paths } = await nodeDirs();
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLW1hcmtlcg';
  await writeFile(
    join(dir, 'logs', 'kube-system_vpcnet-abc', 'vpcnet', '0.log'),
    [
      `{"msg":"kube call","authorization":"Bearer ${jwt}"}`,
      '{"msg":"credentials","accessKeyId":"AKIAIOSFODNN7EXAMPLE","secretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
      'agent serving',
      '',
    ].join('\n'),
  );
  // An operator's hand-edited conflist with a token of its own.
  await writeFile(
    join(dir, 'net.d', '10-vpcnet.conflist'),
    '{"name":"vpcnet","plugins":[{"type":"vpcnet","kubeToken":"conflist-token-77aa"}]}\n',
  );
  const out = join(dir, 'redacted.tar.gz');
  assert.equal((await bundleOf(out, paths)).code, 0);
  const base = await unpacked(dir, out);
  for (const secret of [
    jwt,
    'c2lnbmF0dXJlLW1hcmtlcg',
    'AKIAIOSFODNN7EXAMPLE',
    'wJalrXUtnFEMI',
    'conflist-token-77aa',
  ]) {
    const { stdout } = await run('grep', ['-rlF', secret, base]).catch(() => ({ stdout: '' }));
    assert.equal(stdout, '', `${secret} went into the bundle`);
  }
  const log = await readFile(
    join(base, `logs${dir}`, 'logs', 'kube-system_vpcnet-abc', 'vpcnet', '0.log'),
    'utf8',
  );
  assert.match(log, /"authorization":"Bearer <redacted>"/);
  assert.match(log, /"accessKeyId":"<redacted>","secretAccessKey":"<redacted>"/);
  assert.match(log, /^agent serving$/m, 'the rest of the log stays');
  assert.deepEqual(JSON.parse(await readFile(join(base, 'cni-conf', '10-vpcnet.conflist'), 'utf8')), {
    name: 'vpcnet',
    plugins: [{ type: 'vpcnet', kubeToken: '<redacted>' }],
  });
  const counts = await readFile(join(base, 'redactions.txt'), 'utf8');
  assert.match(counts, /^cni-conf\/10-vpcnet\.conflist\t1$/m);
  assert.match(
    counts,
    new RegExp(`^logs${dir.replace(/[.]/g, '\\.')}/logs/kube-system_vpcnet-abc/vpcnet/0\\.log\t3$`, 'm'),
  );
});
