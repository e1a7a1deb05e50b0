import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CONFLIST_NAME, INSTALL_HELP, INSTALL_OPTIONS, runInstallCommand } from './install.ts';

const PORTMAP = { type: 'portmap', capabilities: { portMappings: true }, snat: true };
const BANDWIDTH = { type: 'bandwidth', capabilities: { bandwidth: true } };
const TUNING = {
  type: 'tuning',
  sysctl: {
    'net.ipv6.conf.all.disable_ipv6': '1',
    'net.ipv6.conf.default.disable_ipv6': '1',
    'net.ipv6.conf.lo.disable_ipv6': '1',
  },
};

interface Scratch {
  readonly dir: string;
  readonly source: string;
  readonly partners: string;
  readonly bin: string;
  readonly conf: string;
  /** runInstallCommand with the scratch dirs, `extra` flags and `env`; returns what it printed. */
  install(extra?: string[], env?: Record<string, string>): Promise<string>;
  /** The same with a stand-in for /proc/sys (never the real one in a test), holding `file` (a path under it). */
  withProcSys(file: string): Promise<{
    file: string;
    run(extra: string[], env: Record<string, string>): Promise<number>;
    procSys: string;
  }>;
  conflist(): Promise<{ plugins: unknown[] }>;
}

/** A plugin build, a partner-plugins dir holding portmap and bandwidth, and empty CNI dirs. */
async function withScratch(body: (s: Scratch) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-install-'));
  try {
    const source = join(dir, 'vpcnet-built');
    await writeFile(source, '#!/bin/sh\necho plugin\n');
    const partners = join(dir, 'partners');
    await mkdir(partners);
    for (const p of ['portmap', 'bandwidth', 'tuning']) await writeFile(join(partners, p), `${p} binary\n`);
    const bin = join(dir, 'bin');
    const conf = join(dir, 'net.d');
    await body({
      dir,
      source,
      partners,
      bin,
      conf,
      async install(extra = [], env = {}) {
        const out: string[] = [];
        const argv = [
          '--cni-bin-dir',
          bin,
          '--cni-conf-dir',
          conf,
          '--partner-plugins-dir',
          partners,
          ...extra,
        ];
        assert.equal(await runInstallCommand(argv, source, (s) => out.push(s), env), 0);
        return out.join('');
      },
      async withProcSys(file) {
        const procSys = join(dir, 'proc-sys');
        const path = join(procSys, file);
        await mkdir(join(path, '..'), { recursive: true });
        const run = (extra: string[], env: Record<string, string>) =>
          runInstallCommand(
            ['--cni-bin-dir', bin, '--cni-conf-dir', conf, '--partner-plugins-dir', partners, ...extra],
            source,
            () => {},
            env,
            procSys,
          );
        return { file: path, run, procSys };
      },
      async conflist() {
        return JSON.parse(await readFile(join(conf, CONFLIST_NAME), 'utf8')) as { plugins: unknown[] };
      },
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('install puts the plugin, portmap and the conflist in place, atomically and executable', async () => {
  await withScratch(async (s) => {
    const printed = await s.install(['--agent-socket', '/run/x/agent.sock', '--mtu', '1500']);
    const plugin = join(s.bin, 'vpcnet');
    assert.equal(await readFile(plugin, 'utf8'), '#!/bin/sh\necho plugin\n');
    assert.equal((await stat(plugin)).mode & 0o777, 0o755);
    assert.equal(await readFile(join(s.bin, 'portmap'), 'utf8'), 'portmap binary\n');
    assert.equal((await stat(join(s.bin, 'portmap'))).mode & 0o777, 0o755);
    assert.deepEqual(await s.conflist(), {
      cniVersion: '1.0.0',
      name: 'vpcnet',
      plugins: [{ type: 'vpcnet', agentSocket: '/run/x/agent.sock', mtu: 1500 }, PORTMAP],
    });
    assert.match(printed, /copied .*\/bin\/portmap/);
    // No temp files left behind by the atomic replace; bandwidth was not asked for.
    assert.deepEqual((await readdir(s.bin)).sort(), ['portmap', 'vpcnet']);
    assert.deepEqual(await readdir(s.conf), [CONFLIST_NAME]);
  });
});

test('--no-portmap leaves portmap out of the conflist and the bin dir', async () => {
  await withScratch(async (s) => {
    await rm(s.partners, { recursive: true });
    await s.install(['--no-portmap']);
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }]);
    assert.deepEqual(await readdir(s.bin), ['vpcnet']);
  });
});

test('--bandwidth chains bandwidth after portmap and copies its binary', async () => {
  await withScratch(async (s) => {
    await s.install(['--bandwidth']);
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }, PORTMAP, BANDWIDTH]);
    assert.equal(await readFile(join(s.bin, 'bandwidth'), 'utf8'), 'bandwidth binary\n');
  });
});

test('ENABLE_BANDWIDTH_PLUGIN=true chains bandwidth as --bandwidth does; false or blank does not', async () => {
  await withScratch(async (s) => {
    await s.install(['--no-portmap'], { ENABLE_BANDWIDTH_PLUGIN: 'true' });
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }, BANDWIDTH]);
    await s.install([], { ENABLE_BANDWIDTH_PLUGIN: 'false' });
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }, PORTMAP]);
    await s.install([], { ENABLE_BANDWIDTH_PLUGIN: ' ' });
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }, PORTMAP]);
  });
});

test('ENABLE_BANDWIDTH_PLUGIN other than true or false is refused, naming the variable and the value', async () => {
  await withScratch(async (s) => {
    await assert.rejects(
      s.install([], { ENABLE_BANDWIDTH_PLUGIN: 'yes' }),
      /ENABLE_BANDWIDTH_PLUGIN must be true or false, got "yes"/,
    );
    await assert.rejects(readdir(s.conf), 'a refused install wrote the conf dir');
  });
});

test('a chained plugin already in the bin dir is kept as it is, without a source to copy from', async () => {
  await withScratch(async (s) => {
    await mkdir(s.bin);
    await writeFile(join(s.bin, 'portmap'), 'newer portmap\n', { mode: 0o755 });
    await rm(join(s.partners, 'portmap'));
    const printed = await s.install();
    assert.equal(await readFile(join(s.bin, 'portmap'), 'utf8'), 'newer portmap\n');
    assert.doesNotMatch(printed, /copied/);
    assert.deepEqual((await s.conflist()).plugins, [{ type: 'vpcnet' }, PORTMAP]);
  });
});

test('a chained plugin in neither dir fails the install, naming each missing file, and nothing is written', async () => {
  await withScratch(async (s) => {
    await rm(s.partners, { recursive: true });
    const err = await s.install(['--bandwidth']).then(
      () => assert.fail('install succeeded without portmap and bandwidth'),
      (e: unknown) => e as Error,
    );
    for (const p of ['portmap', 'bandwidth']) {
      assert.ok(
        err.message.includes(join(s.bin, p)),
        `message does not name ${join(s.bin, p)}: ${err.message}`,
      );
      assert.ok(err.message.includes(join(s.partners, p)), `message does not name ${join(s.partners, p)}`);
    }
    assert.match(err.message, /--no-portmap/);
    assert.match(err.message, /containernetworking-plugins/);
    await assert.rejects(readdir(s.bin), 'the bin dir was created although the install failed');
    await assert.rejects(readdir(s.conf), 'the conf dir was created although the install failed');
  });
});

test('--help names every option install accepts, and no other', async () => {
  const out: string[] = [];
  assert.equal(await runInstallCommand(['--help'], '/nonexistent', (s) => out.push(s), {}), 0);
  assert.equal(out.join(''), INSTALL_HELP);
  const named = new Set([...INSTALL_HELP.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)].map((m) => m[1]));
  assert.deepEqual([...named].sort(), Object.keys(INSTALL_OPTIONS).sort());
  assert.match(INSTALL_HELP, /ENABLE_BANDWIDTH_PLUGIN=true/);
});

test('install refuses missing dirs and a bad MTU with the reason', async () => {
  await assert.rejects(
    runInstallCommand(['--cni-bin-dir', '/tmp/x'], '/nonexistent', () => {}, {}),
    /--cni-conf-dir/,
  );
  await assert.rejects(
    runInstallCommand(
      ['--cni-bin-dir', '/tmp/x', '--cni-conf-dir', '/tmp/y', '--mtu', '70000'],
      '/nonexistent',
      () => {},
      {},
    ),
    /--mtu must be/,
  );
});

test('--ipv6-forwarding and ENABLE_IPv6=true set net.ipv6.conf.all.forwarding=1 before the conflist; without them it is left alone', async () => {
  await withScratch(async (s) => {
    const { file, run, procSys } = await s.withProcSys('net/ipv6/conf/all/forwarding');
    await writeFile(file, '0\n');
    await run([], {});
    assert.equal(await readFile(file, 'utf8'), '0\n', 'left alone without the flag');
    await run(['--ipv6-forwarding'], {});
    assert.equal(await readFile(file, 'utf8'), '1\n');
    await writeFile(file, '0\n');
    await run([], { ENABLE_IPv6: 'true' });
    assert.equal(await readFile(file, 'utf8'), '1\n', 'ENABLE_IPv6=true, as upstream init reads it');
    // Where it cannot be set, install fails before it writes the conflist, naming the sysctl.
    await rm(s.conf, { recursive: true, force: true });
    await rm(procSys, { recursive: true, force: true });
    await assert.rejects(run(['--ipv6-forwarding'], {}), /net\.ipv6\.conf\.all\.forwarding=1 .*privileged/);
    await assert.rejects(readdir(s.conf), 'the conflist was written although forwarding could not be set');
  });
});

test("aws-node's conflist stops a plain install, and --replace-aws-node moves it aside after vpcnet's is written", async () => {
  await withScratch(async (s) => {
    const aws = join(s.conf, '10-aws.conflist');
    await mkdir(s.conf, { recursive: true });
    await writeFile(aws, '{"cniVersion":"0.4.0","name":"aws-cni","plugins":[{"type":"aws-cni"}]}\n');
    await assert.rejects(
      s.install([]),
      /aws-node's .*10-aws\.conflist is in the CNI conf dir .*--replace-aws-node/,
    );
    assert.deepEqual(await readdir(s.bin).catch(() => []), [], 'a refused install writes nothing');
    const printed = await s.install(['--replace-aws-node']);
    assert.match(printed, /aws-node's conflist moved to .*10-aws\.conflist\.replaced-by-vpcnet/);
    assert.deepEqual((await readdir(s.conf)).sort(), ['10-aws.conflist.replaced-by-vpcnet', CONFLIST_NAME]);
    // Run again (a restarted init container): nothing of aws-node's is left to move.
    await s.install(['--replace-aws-node']);
    assert.deepEqual((await readdir(s.conf)).sort(), ['10-aws.conflist.replaced-by-vpcnet', CONFLIST_NAME]);
  });
});

test('--ipv6-forwarding is also what ENABLE_V6_EGRESS=true asks for, as upstream init reads it', async () => {
  await withScratch(async (s) => {
    const { file, run } = await s.withProcSys('net/ipv6/conf/all/forwarding');
    await writeFile(file, '0\n');
    await run([], { ENABLE_V6_EGRESS: 'false' });
    assert.equal(await readFile(file, 'utf8'), '0\n');
    await run([], { ENABLE_V6_EGRESS: 'true' });
    assert.equal(await readFile(file, 'utf8'), '1\n');
  });
});

test('--disable-tcp-early-demux and DISABLE_TCP_EARLY_DEMUX=true set net.ipv4.tcp_early_demux=0; false leaves it alone', async () => {
  await withScratch(async (s) => {
    const { file, run } = await s.withProcSys('net/ipv4/tcp_early_demux');
    await writeFile(file, '1\n');
    // Upstream's manifests carry DISABLE_TCP_EARLY_DEMUX=false: that writes nothing (an
    // unprivileged install could not), where upstream's privileged init wrote 1.
    await run([], { DISABLE_TCP_EARLY_DEMUX: 'false' });
    assert.equal(await readFile(file, 'utf8'), '1\n');
    await run([], { DISABLE_TCP_EARLY_DEMUX: 'true' });
    assert.equal(await readFile(file, 'utf8'), '0\n');
    await writeFile(file, '1\n');
    await run(['--disable-tcp-early-demux'], {});
    assert.equal(await readFile(file, 'utf8'), '0\n');
    // A kernel without the sysctl (upstream's init checks for it too): nothing to set, no failure.
    await rm(file);
    await run(['--disable-tcp-early-demux'], {});
    await assert.rejects(readFile(file, 'utf8'));
  });
});

test('--disable-pod-v6 and DISABLE_POD_V6=true chain tuning last, disabling IPv6 in the pod, and copy its binary', async () => {
  await withScratch(async (s) => {
    await s.install([], { DISABLE_POD_V6: 'true', ENABLE_BANDWIDTH_PLUGIN: 'true' });
    assert.deepEqual((await s.conflist()).plugins.slice(1), [PORTMAP, BANDWIDTH, TUNING]);
    assert.equal(await readFile(join(s.bin, 'tuning'), 'utf8'), 'tuning binary\n');
    await s.install(['--disable-pod-v6', '--no-portmap']);
    assert.deepEqual((await s.conflist()).plugins.slice(1), [TUNING]);
    await s.install([], { DISABLE_POD_V6: 'false' });
    assert.deepEqual((await s.conflist()).plugins.slice(1), [PORTMAP]);
    await assert.rejects(s.install([], { DISABLE_POD_V6: 'yes' }), /DISABLE_POD_V6 must be true or false/);
  });
});

test('a missing tuning binary fails install naming the way out, before anything is written', async () => {
  await withScratch(async (s) => {
    await rm(join(s.partners, 'tuning'));
    await assert.rejects(
      s.install(['--disable-pod-v6']),
      /tuning: neither .* leave out --disable-pod-v6 \(and DISABLE_POD_V6\)/,
    );
    await assert.rejects(readdir(s.conf));
  });
});
