import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../infra/log.ts';
import { VpcCidrRefresh } from './vpc-cidr-refresh.ts';

function recordingLog(lines: string[]): Logger {
  const put = (msg: string) => lines.push(msg);
  return { debug: put, info: put, warn: put, error: put };
}

function refresh(answers: (readonly string[])[], initial: readonly string[]) {
  const applied: (readonly string[])[] = [];
  const lines: string[] = [];
  const r = new VpcCidrRefresh({
    read: async () => answers.shift() ?? initial,
    apply: async (cidrs) => {
      applied.push(cidrs);
    },
    initial,
    log: recordingLog(lines),
  });
  return { r, applied, lines };
}

test('a CIDR added to the VPC is applied once, logged and counted; an unchanged list applies nothing', async () => {
  const { r, applied, lines } = refresh(
    [['10.0.0.0/16'], ['10.0.0.0/16', '100.64.0.0/16'], ['100.64.0.0/16', '10.0.0.0/16']],
    ['10.0.0.0/16'],
  );
  assert.equal(await r.pass(), false);
  assert.equal(await r.pass(), true);
  assert.equal(await r.pass(), false, 'the same CIDRs in another order are no change');
  assert.deepEqual(applied, [['10.0.0.0/16', '100.64.0.0/16']]);
  assert.deepEqual(r.current, ['10.0.0.0/16', '100.64.0.0/16']);
  assert.equal(r.changes, 1);
  assert.deepEqual(lines, ['VPC CIDRs changed: SNAT exclusions updated']);
});

test('an empty metadata answer keeps the CIDRs the node has', async () => {
  const { r, applied } = refresh([[]], ['10.0.0.0/16']);
  assert.equal(await r.pass(), false);
  assert.deepEqual(applied, []);
  assert.deepEqual(r.current, ['10.0.0.0/16']);
});

test('a failed apply keeps the old list, so the next pass tries again', async () => {
  let fail = true;
  const applied: (readonly string[])[] = [];
  const r = new VpcCidrRefresh({
    read: async () => ['10.0.0.0/16', '100.64.0.0/16'],
    apply: async (cidrs) => {
      if (fail) throw new Error('nft -f failed');
      applied.push(cidrs);
    },
    initial: ['10.0.0.0/16'],
    log: recordingLog([]),
  });
  await assert.rejects(r.pass(), /nft -f failed/);
  assert.deepEqual(r.current, ['10.0.0.0/16']);
  fail = false;
  assert.equal(await r.pass(), true);
  assert.deepEqual(applied, [['10.0.0.0/16', '100.64.0.0/16']]);
});

test('every refresh is counted by its result: unchanged, changed, failed', async () => {
  const results: string[] = [];
  let readFails = false;
  const answers = [['10.0.0.0/16'], ['10.0.0.0/16', '100.64.0.0/16']];
  const r = new VpcCidrRefresh({
    read: async () => {
      if (readFails) throw new Error('IMDS unreachable');
      return answers.shift() ?? ['10.0.0.0/16', '100.64.0.0/16'];
    },
    apply: async () => {},
    initial: ['10.0.0.0/16'],
    log: recordingLog([]),
    counted: (result) => results.push(result),
  });
  await r.pass();
  await r.pass();
  readFails = true;
  await assert.rejects(r.pass(), /IMDS unreachable/);
  assert.deepEqual(results, ['unchanged', 'changed', 'failed']);
});
