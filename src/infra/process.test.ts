// The runner against real programs of the base system (sh, cat, env, sleep): none touches the network.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CommandFailed,
  commandText,
  mustSucceed,
  NOT_STARTED,
  type ProcessResult,
  runProcess,
  runToSuccess,
} from './process.ts';

test('the exit code and both streams come back, and a non-zero exit is not an error', async () => {
  const r = await runProcess(['/bin/sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.deepEqual(r, { code: 3, stdout: 'out\n', stderr: 'err\n' });
});

test('stdin is fed to the program and closed', async () => {
  const r = await runProcess(['cat'], { stdin: 'line 1\nline 2\n' });
  assert.equal(r.code, 0);
  assert.equal(r.stdout, 'line 1\nline 2\n');
});

test('arguments reach the program as given: no shell expands them', async () => {
  const r = await runProcess(['printf', '%s|', '$HOME', '*', 'a b;c']);
  assert.equal(r.stdout, '$HOME|*|a b;c|');
});

test('env, when given, is the whole environment of the program', async () => {
  const r = await runProcess(['/usr/bin/env'], { env: { ONLY: 'this' } });
  assert.equal(r.stdout, 'ONLY=this\n');
});

test('a program that cannot be started is code 127 with the reason in stderr', async () => {
  const r = await runProcess(['/nonexistent/vpcnet-tool', 'x']);
  assert.equal(r.code, NOT_STARTED);
  assert.match(r.stderr, /\/nonexistent\/vpcnet-tool: .*ENOENT/);
  assert.deepEqual(await runProcess([]), { code: NOT_STARTED, stdout: '', stderr: 'empty command' });
});

test('a program ended by a signal is 128 + its number, and the signal is named', async () => {
  const r = await runProcess(['/bin/sh', '-c', 'echo partial >&2; kill -TERM $$']);
  assert.equal(r.code, 128 + 15);
  assert.equal(r.signal, 'SIGTERM');
  assert.equal(r.stderr, 'partial\nkilled by SIGTERM');
});

test('a program running past its time limit is killed, and stderr says why', async () => {
  const r = await runProcess(['sleep', '30'], { timeoutMs: 50 });
  assert.equal(r.signal, 'SIGKILL');
  assert.equal(r.code, 128 + 9);
  assert.equal(r.stderr, 'killed by SIGKILL (still running after 50 ms)');
});

test('a program that exits without reading its stdin is no error of ours', async () => {
  const r = await runProcess(['true'], { stdin: 'x'.repeat(4 << 20) });
  assert.equal(r.code, 0);
});

test('mustSucceed passes a success through and turns a failure into CommandFailed naming command and stderr', async () => {
  const ok = await runToSuccess(['/bin/sh', '-c', 'echo fine']);
  assert.equal(ok.stdout, 'fine\n');
  const err = await runToSuccess(['/bin/sh', '-c', 'echo "Cannot find device" >&2; exit 1']).then(
    () => assert.fail('expected CommandFailed'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CommandFailed);
  assert.equal(
    err.message,
    '/bin/sh -c "echo \\"Cannot find device\\" >&2; exit 1" failed (exit 1): Cannot find device',
  );
  assert.equal(err.stderr, 'Cannot find device\n');
  assert.equal(err.result.code, 1);
});

test('a CommandFailed quotes the stdin the command was given, cut short when long', async () => {
  const failing = mustSucceed(async (): Promise<ProcessResult> => ({ code: 2, stdout: '', stderr: '' }));
  await assert.rejects(
    failing(['ip', '-batch', '-'], { stdin: 'link del a\nlink del b\n' }),
    (e: unknown) =>
      e instanceof CommandFailed &&
      e.message === 'ip -batch - <<< "link del a\\nlink del b\\n" failed (exit 2): no message',
  );
  await assert.rejects(failing(['nft', '-f', '-'], { stdin: 'y'.repeat(1000) }), (e: unknown) => {
    assert.ok(e instanceof CommandFailed);
    assert.ok(e.command.endsWith(`${'y'.repeat(400)}…"`), e.command);
    return true;
  });
});

test('a CommandFailed of a killed program names the signal', () => {
  const e = new CommandFailed(['sleep', '9'], {
    code: 137,
    stdout: '',
    stderr: 'killed by SIGKILL',
    signal: 'SIGKILL',
  });
  assert.equal(e.message, 'sleep 9 failed (killed by SIGKILL): killed by SIGKILL');
});

test('commandText quotes only the arguments a reader could misread', () => {
  assert.equal(commandText(['ip', '-n', 'L-vpc', 'link', 'show']), 'ip -n L-vpc link show');
  assert.equal(commandText(['sh', '-c', 'a b', '']), 'sh -c "a b" ""');
});
