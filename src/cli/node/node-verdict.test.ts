import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordedState } from '../testing/fake-agent-socket.ts';
import { parseNodeState } from './node-state.ts';
import { nodeFindings, RECENT_ERROR_WINDOW_MS, servingVerdict } from './node-verdict.ts';

const NOW = Date.parse('2026-11-30T10:05:00.000Z');

test('a node with a free pool and no errors is healthy, with no finding', async () => {
  const s = parseNodeState(await recordedState('healthy-state'));
  assert.deepEqual(nodeFindings(s, NOW), []);
  assert.equal(servingVerdict(nodeFindings(s, NOW)), 'healthy');
});

test('pool growth blocked, a lost ENI, recovery and a recent CNI failure are warnings: degraded', async () => {
  const s = parseNodeState(await recordedState('degraded-state'));
  const texts = nodeFindings(s, NOW)
    .filter((f) => f.severity === 'warning')
    .map((f) => f.text);
  assert.ok(
    texts.some(
      (t) => t.includes('cannot grow') && t.includes('AttachmentLimitExceeded') && t.includes('7 failed'),
    ),
  );
  assert.ok(texts.some((t) => t.includes('eni-0lost')));
  assert.ok(texts.some((t) => t.startsWith('recovery in progress (ledger unreadable)')));
  assert.ok(texts.some((t) => t.includes('ADD default/web-1') && t.includes('no free address')));
  assert.equal(servingVerdict(nodeFindings(s, NOW)), 'degraded');
});

test('EC2 and CNI errors older than the window are history, not warnings', async () => {
  const raw = (await recordedState('healthy-state')) as Record<string, unknown>;
  const old = new Date(NOW - RECENT_ERROR_WINDOW_MS - 1000).toISOString();
  const fresh = new Date(NOW - 1000).toISOString();
  const cloudError = (time: string) => ({
    time,
    action: 'AssignPrivateIpAddresses',
    code: 'RequestLimitExceeded',
    message: 'slow down',
  });
  const oldOnly = parseNodeState({ ...raw, cloudErrors: [cloudError(old)] });
  assert.deepEqual(nodeFindings(oldOnly, NOW), []);
  const recent = parseNodeState({ ...raw, cloudErrors: [cloudError(fresh), cloudError(old)] });
  const [finding] = nodeFindings(recent, NOW);
  assert.equal(finding?.severity, 'warning');
  assert.match(
    finding?.text ?? '',
    /^1 EC2 error\(s\).*AssignPrivateIpAddresses RequestLimitExceeded: slow down/,
  );
});

test('counters of differences EC2 sync corrected are notes; a held address missing in EC2 is a warning', async () => {
  const raw = (await recordedState('healthy-state')) as { pool: { sync: Record<string, unknown> } } & Record<
    string,
    unknown
  >;
  const withSync = (differences: Record<string, number>) =>
    parseNodeState({ ...raw, pool: { ...raw.pool, sync: { ...raw.pool.sync, differences } } });
  const corrected = nodeFindings(withSync({ addressAdded: 2, eniGone: 0 }), NOW);
  assert.deepEqual(
    corrected.map((f) => f.severity),
    ['note'],
  );
  assert.match(corrected[0]?.text ?? '', /addressAdded 2/);
  assert.equal(servingVerdict(corrected), 'healthy');
  const held = nodeFindings(withSync({ heldAddressMissing: 1 }), NOW);
  assert.equal(servingVerdict(held), 'degraded');
});

test('an empty pool with addresses all taken warns that ADDs wait; spooled DELs are a warning', async () => {
  const raw = (await recordedState('healthy-state')) as { pool: Record<string, unknown> } & Record<
    string,
    unknown
  >;
  const full = parseNodeState({
    ...raw,
    pool: { ...raw.pool, stats: { total: 3, assigned: 3, cooling: 0, available: 0 } },
    spoolDepth: 2,
  });
  const texts = nodeFindings(full, NOW).map((f) => f.text);
  assert.ok(texts.some((t) => t.startsWith('no free address')));
  assert.ok(texts.some((t) => t.startsWith('2 spooled DEL(s)')));
});

test('a state missing most fields (another agent version) still parses', () => {
  const s = parseNodeState({ instanceId: 'i-1', attachments: [{ key: { containerId: 'c' } }] });
  assert.equal(s.instanceId, 'i-1');
  assert.equal(s.attachments[0]?.containerId, 'c');
  assert.equal(s.attachments[0]?.phase, 'ready');
  assert.deepEqual(s.enis, []);
  assert.deepEqual(nodeFindings(s, NOW), []);
});
