import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PoolReadiness } from '../agent/loops/node-readiness.ts';
import { judgeTaints, type PoolSample, taintWritesOf } from './taint-watch.ts';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function line(s: number, fields: Record<string, unknown>): string {
  return JSON.stringify({ time: at(s), msg: 'kube', method: 'PATCH', status: 200, ...fields });
}

test('the taint writes of one node come from the API log; refused writes and other nodes do not count', () => {
  const path = '/api/v1/nodes/n1';
  const log = [
    line(1, { path, changed: ['spec.taints'], taints: ['vpcnet.io/ip-exhausted'] }),
    line(1.1, { path, changed: ['status.conditions'] }),
    line(1.2, { path: '/api/v1/nodes/n2', changed: ['spec.taints'], taints: ['vpcnet.io/ip-exhausted'] }),
    line(1.3, { path, status: 409, taints: [] }),
    line(2, { path, changed: ['spec.taints'], taints: ['other'] }),
    '{"time":"cut off',
  ].join('\n');
  assert.deepEqual(taintWritesOf(log, 'n1'), [
    { at: T0 + 1000, tainted: true },
    { at: T0 + 2000, tainted: false },
  ]);
});

const empty: PoolReadiness = {
  free: 0,
  blocked: 'InsufficientFreeAddressesInSubnet',
  roomToGrow: true,
  warmWorth: 5,
};
const serving: PoolReadiness = { free: 5, blocked: null, roomToGrow: true, warmWorth: 5 };
/** Below the warm target's worth and still blocked: the hysteresis keeps the taint on. */
const trickle: PoolReadiness = {
  free: 2,
  blocked: 'InsufficientFreeAddressesInSubnet',
  roomToGrow: true,
  warmWorth: 5,
};

function looks(from: number, to: number, pool: PoolReadiness | undefined): PoolSample[] {
  const out: PoolSample[] = [];
  for (let s = from; s <= to + 1e-9; s += 0.25) out.push({ at: T0 + s * 1000, pool });
  return out;
}

const judge = (writes: { at: number; tainted: boolean }[], samples: PoolSample[]) =>
  judgeTaints(writes, samples, { taintedAtStart: false, startAt: T0, endAt: T0 + 30_000, graceMs: 3000 });

test('a taint while the pool is empty and blocked, off once it can serve: none false', () => {
  const f = judge(
    [
      { at: T0 + 2000, tainted: true },
      { at: T0 + 10_500, tainted: false },
    ],
    [
      ...looks(0, 1.75, serving),
      ...looks(2, 6, empty),
      ...looks(6.25, 10, trickle),
      ...looks(10.25, 20, serving),
    ],
  );
  assert.deepEqual([f.applied, f.taintWrites, f.falseTaints], [1, 2, 0]);
  assert.deepEqual(f.episodes, [
    'tainted at 2.0 s for 8.5 s: 35 looks, 2 could serve, 0 with the agent down',
  ]);
});

test('a taint kept past the grace while the node can serve is false, once per episode', () => {
  const f = judge(
    [
      { at: T0 + 2000, tainted: true },
      { at: T0 + 20_000, tainted: false },
    ],
    [...looks(0, 4, empty), ...looks(4.25, 25, serving)],
  );
  assert.equal(f.falseTaints, 1);
  assert.match(
    f.details[0] ?? '',
    /tainted \(since 2\.0 s\) for 3\.\d s while it could serve: 5 addresses free/,
  );
});

test('a taint put on a serving node and never taken off is false up to the end of the watch', () => {
  const f = judgeTaints([{ at: T0 + 5000, tainted: true }], looks(0, 30, serving), {
    taintedAtStart: false,
    startAt: T0,
    endAt: T0 + 30_000,
    graceMs: 3000,
  });
  assert.equal(f.applied, 1);
  assert.equal(f.falseTaints, 1);
});

test('a taint on before the watch counts as held, not as applied', () => {
  const f = judgeTaints([], looks(0, 30, serving), {
    taintedAtStart: true,
    startAt: T0,
    endAt: T0 + 30_000,
    graceMs: 3000,
  });
  assert.deepEqual([f.applied, f.falseTaints], [0, 1]);
});

test('looks while the agent is down break the run: the restarted agent gets its grace again', () => {
  const f = judge(
    [
      { at: T0 + 1000, tainted: true },
      { at: T0 + 9000, tainted: false },
    ],
    [...looks(1, 3, serving), ...looks(3.25, 6, undefined), ...looks(6.25, 8.75, serving)],
  );
  assert.equal(f.falseTaints, 0);
});

test('an on and off quicker than any look still counts as applied', () => {
  const f = judge(
    [
      { at: T0 + 5000, tainted: true },
      { at: T0 + 5100, tainted: false },
    ],
    looks(0, 10, empty),
  );
  assert.deepEqual([f.applied, f.falseTaints], [1, 0]);
});
