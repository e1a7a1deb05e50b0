import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logFollower } from './log-follower.ts';

function fakeFile(): { append(text: string): void; read(): Buffer } {
  let content = Buffer.alloc(0);
  return {
    append(text) {
      content = Buffer.concat([content, Buffer.from(text)]);
    },
    read: () => content,
  };
}

test('each JSON line appended to the log is passed once, a partial line waits for its end', () => {
  const file = fakeFile();
  const seen: unknown[] = [];
  const follow = logFollower('supervisor.log', (l) => seen.push(l), file.read);
  file.append('{"msg":"network created"}\n{"msg":"emu');
  follow();
  assert.deepEqual(seen, [{ msg: 'network created' }]);
  file.append('lator ready"}\n');
  follow();
  follow();
  assert.deepEqual(seen, [{ msg: 'network created' }, { msg: 'emulator ready' }]);
});

test('lines that are not JSON objects (a stack trace, a number) are skipped', () => {
  const file = fakeFile();
  const seen: unknown[] = [];
  const follow = logFollower('supervisor.log', (l) => seen.push(l), file.read);
  file.append('Error: boom\n    at x (y.js:1)\n42\n["a"]\n{"msg":"lab ready"}\n');
  follow();
  assert.deepEqual(seen, [{ msg: 'lab ready' }]);
});

test('a log that does not exist yet reads as empty', () => {
  const seen: unknown[] = [];
  const follow = logFollower(
    'missing.log',
    (l) => seen.push(l),
    () => {
      throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    },
  );
  follow();
  assert.deepEqual(seen, []);
});
