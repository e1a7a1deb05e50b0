import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../infra/log.ts';
import type { Resource } from '../plan/resource.ts';
import { SnatRelease } from './snat-release.ts';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

function ipsOf(resources: readonly Resource[]): string[] {
  return resources.map((r) => (r.kind === 'snat' ? r.ip : `not snat: ${r.kind}`));
}

test('releases made together go in one removal, and those queued while it is in flight in the next one', async () => {
  const calls: string[][] = [];
  let unblock: () => void = () => {};
  const first = new Promise<void>((r) => {
    unblock = r;
  });
  const release = new SnatRelease({
    remove: async (resources) => {
      calls.push(ipsOf(resources));
      if (calls.length === 1) await first;
    },
    log: quiet,
  });
  const done: string[] = [];
  const together = new SnatRelease({
    remove: async (resources) => {
      calls.push(ipsOf(resources));
    },
    log: quiet,
  });
  await Promise.all([together.release('10.0.1.1'), together.release('10.0.1.2')]);
  assert.deepEqual(calls.splice(0), [['10.0.1.1', '10.0.1.2']]);
  const a = release.release('10.0.0.1').then(() => done.push('10.0.0.1'));
  await new Promise((r) => setImmediate(r));
  const rest = ['10.0.0.2', '10.0.0.3', '10.0.0.4'].map((ip) =>
    release.release(ip).then(() => done.push(ip)),
  );
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(calls, [['10.0.0.1']], 'the first removal is in flight alone');
  assert.deepEqual(done, [], 'nothing resolves before its element is gone');
  assert.equal(release.pending, 4);
  unblock();
  await Promise.all([a, ...rest]);
  assert.deepEqual(calls, [['10.0.0.1'], ['10.0.0.2', '10.0.0.3', '10.0.0.4']]);
  assert.equal(release.pending, 0);
});

test('a failed removal is retried, with what came meanwhile, and resolves only once it succeeded', async () => {
  const calls: string[][] = [];
  const warnings: unknown[] = [];
  const release = new SnatRelease({
    remove: async (resources) => {
      calls.push(ipsOf(resources));
      if (calls.length === 1) {
        // Another DEL arrives while the first removal fails.
        void release.release('10.0.0.9');
        throw new Error('nftables answers: Device or resource busy');
      }
    },
    log: { ...quiet, warn: (_msg, fields) => warnings.push(fields) },
    retryMs: 5,
  });
  let resolved = false;
  const p = release.release('10.0.0.8').then(() => {
    resolved = true;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(resolved, false);
  await p;
  await release.idle();
  assert.deepEqual(calls, [['10.0.0.8'], ['10.0.0.8', '10.0.0.9']]);
  assert.equal(warnings.length, 1);
});

test('idle() waits for every queued element and returns at once when nothing is pending', async () => {
  const removed: string[] = [];
  const release = new SnatRelease({
    remove: async (resources) => {
      await new Promise((r) => setTimeout(r, 5));
      removed.push(...ipsOf(resources));
    },
    log: quiet,
  });
  await release.idle();
  void release.release('10.0.0.5');
  void release.release('10.0.0.6');
  await release.idle();
  assert.deepEqual(removed.sort(), ['10.0.0.5', '10.0.0.6']);
});
