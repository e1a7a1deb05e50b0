// `npm start` runs `vpcnetctl demo`; --no-wait skips the serving phase so the whole flow
// (lab up, three pods through the plugin, the table with live checks, teardown) runs here. A demo
// that serves keeps its lab from a second demo of the same name, and Ctrl-C removes it all.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { getJson } from '../../src/infra/unix-socket-json.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { readRecords } from '../../src/lab/processes.ts';
import { ctl, repoRoot, sh, uniqueLabName, waitFor } from '../lab-fixture.ts';

test('the demo shows three pods with VPC addresses that reach the VPC host and each other, then removes everything', async () => {
  const name = uniqueLabName('vpcdm');
  try {
    const out = await ctl(['demo', '--name', name, '--no-wait']);
    const rows = out.split('\n').filter((l) => l.startsWith('default/demo-'));
    assert.equal(rows.length, 3, out);
    const ips = rows.map((r) => /\b(10\.0\.\d+\.\d+)\b/.exec(r)?.[1]);
    assert.equal(new Set(ips).size, 3, `addresses not distinct: ${ips.join(', ')}`);
    for (const r of rows) {
      assert.ok(!r.includes('NO'), `a reachability check failed: ${r}`);
      assert.match(r, /yes/);
    }
    assert.match(out, /^node1 pool: \d+ addresses, 3 assigned/m);
    assert.doesNotMatch(out, /"level":/, 'no agent log line on the demo’s screen');
    assert.match(out, /done: no namespace, process or file of the lab is left/);
    const left = (await sh(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(`${name}-`));
    assert.deepEqual(left, []);
  } finally {
    await ctl(['lab', 'down', '--name', name]);
  }
});

test('a second demo of the same name leaves a serving one alone; Ctrl-C then removes it all', async () => {
  const name = uniqueLabName('vpcdm');
  const first = spawn(process.execPath, [join(repoRoot, 'bin', 'vpcnetctl'), 'demo', '--name', name], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  first.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => first.on('close', resolve));
  try {
    await waitFor(
      'the first demo to serve',
      async () => (out.includes('serving.') ? true : undefined),
      120_000,
    );
    const log = labLayout(name, 1).nodes[0]!.agentLog;
    assert.ok(out.includes(`The agent's log: ${log}`), out);
    const second = await runProcess([
      process.execPath,
      join(repoRoot, 'bin', 'vpcnetctl'),
      'demo',
      '--name',
      name,
    ]);
    assert.equal(second.code, 1, second.stdout + second.stderr);
    assert.match(
      second.stdout,
      new RegExp(`^a demo is already running in lab ${name} \\(pid ${first.pid}\\); it is left alone`),
    );
    const health = await getJson(labLayout(name, 1).nodes[0]!.agentSocket, '/v1/healthz');
    assert.equal(health.status, 200, 'the first demo’s lab still serves');
    first.kill('SIGINT');
    assert.equal(await exited, 0, out);
    assert.match(out, /done: no namespace, process or file of the lab is left/);
    const left = (await sh(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(`${name}-`));
    assert.deepEqual(left, []);
  } finally {
    if (first.exitCode === null) first.kill('SIGINT');
    await exited;
    await ctl(['lab', 'down', '--name', name]);
  }
});

test('on a terminal the table is redrawn in place, and the agent’s log stays in its file', async () => {
  const name = uniqueLabName('vpcdm');
  const cmd = `${process.execPath} ${join(repoRoot, 'bin', 'vpcnetctl')} demo --name ${name}`;
  // script(1) gives the demo a terminal; its output is the terminal's.
  const term = spawn('script', ['-qfc', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  term.stdout.on('data', (c: Buffer) => {
    screen += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => term.on('close', resolve));
  try {
    await waitFor(
      'two redraws',
      async () => ((screen.match(/updated /g) ?? []).length >= 2 ? true : undefined),
      120_000,
    );
    // Each redraw goes back up over the table and the lines under it, clearing each line it rewrites.
    const ESC = '\u001b';
    assert.ok(new RegExp(`${ESC}\\[\\d+A${ESC}\\[2KPOD\\s+NETNS\\s+VPC ADDRESS`).test(screen), screen);
    assert.ok(screen.includes(`${ESC}[2Kdefault/demo-1 `), screen);
    assert.doesNotMatch(screen, /"level":"(info|warn)"/, 'no agent log line on the screen');
    // Ctrl-C: the terminal signals the demo (its pid is in the lab's demo record).
    const demo = (await readRecords(labLayout(name, 1).files.pidsDir)).find((r) => r.role === 'demo');
    assert.ok(demo !== undefined, 'the demo records itself in its lab');
    process.kill(demo.pid, 'SIGINT');
    assert.equal(await exited, 0);
    assert.match(screen, /done: no namespace, process or file of the lab is left/);
  } finally {
    if (term.exitCode === null) term.kill('SIGINT');
    await exited;
    await ctl(['lab', 'down', '--name', name]);
  }
});
