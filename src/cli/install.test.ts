import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CONFLIST_NAME, runInstallCommand } from './install.ts';

test('install puts the plugin and the conflist in place, atomically and executable', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-install-'));
  try {
    const source = join(dir, 'vpcnet-built');
    await writeFile(source, '#!/bin/sh\necho plugin\n');
    const out: string[] = [];
    const code = await runInstallCommand(
      [
        '--cni-bin-dir',
        join(dir, 'bin'),
        '--cni-conf-dir',
        join(dir, 'net.d'),
        '--agent-socket',
        '/run/x/agent.sock',
        '--mtu',
        '1500',
      ],
      source,
      (s) => out.push(s),
    );
    assert.equal(code, 0);
    const plugin = join(dir, 'bin', 'vpcnet');
    assert.equal(await readFile(plugin, 'utf8'), '#!/bin/sh\necho plugin\n');
    assert.equal((await stat(plugin)).mode & 0o777, 0o755);
    const conf = JSON.parse(await readFile(join(dir, 'net.d', CONFLIST_NAME), 'utf8'));
    assert.deepEqual(conf, {
      cniVersion: '1.0.0',
      name: 'vpcnet',
      plugins: [{ type: 'vpcnet', agentSocket: '/run/x/agent.sock', mtu: 1500 }],
    });
    // No temp files left behind by the atomic replace.
    assert.deepEqual(await readdir(join(dir, 'bin')), ['vpcnet']);
    assert.deepEqual(await readdir(join(dir, 'net.d')), [CONFLIST_NAME]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('install refuses missing dirs and a bad MTU with the reason', async () => {
  await assert.rejects(
    runInstallCommand(['--cni-bin-dir', '/tmp/x'], '/nonexistent', () => {}),
    /--cni-conf-dir/,
  );
  await assert.rejects(
    runInstallCommand(
      ['--cni-bin-dir', '/tmp/x', '--cni-conf-dir', '/tmp/y', '--mtu', '70000'],
      '/nonexistent',
      () => {},
    ),
    /--mtu must be/,
  );
});
