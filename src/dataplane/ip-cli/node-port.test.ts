import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodePortRuleChanges, nodePortScript, parseNodePortRules, rpFilterProblem } from './node-port.ts';

const cfg = { enabled: true, mark: 0x80, primaryLink: 'eth0', podLinkPrefixes: ['vpc', 'vlb'] };

test('NodePort chain: marks connections arriving on the primary ENI for a local address, restores the bit from pod links', () => {
  const lines = nodePortScript(cfg).trim().split('\n');
  for (const line of lines) assert.match(line, / ip vpcnet( |$)/, 'only vpcnet table is touched');
  assert.match(
    lines[1] ?? '',
    /add chain ip vpcnet nodeport \{ type filter hook prerouting priority mangle; /,
  );
  assert.equal(lines[2], 'flush chain ip vpcnet nodeport', 'a re-run replaces the rules');
  assert.equal(
    lines[3],
    'add rule ip vpcnet nodeport iifname "eth0" fib daddr . iif type local ct mark set ct mark or 0x80',
  );
  assert.deepEqual(lines.slice(4), [
    'add rule ip vpcnet nodeport iifname { "vpc*", "vlb*" } ct mark and 0x80 == 0x0 meta mark set meta mark and 0xffffff7f',
    'add rule ip vpcnet nodeport iifname { "vpc*", "vlb*" } ct mark and 0x80 == 0x80 meta mark set meta mark or 0x80',
  ]);
});

test('a mark of several bits restores each bit with its own clear and set rule', () => {
  const restores = nodePortScript({ ...cfg, mark: 0x5 })
    .split('\n')
    .filter((l) => l.includes('meta mark set'));
  assert.equal(restores.length, 4);
  assert.match(restores[0] ?? '', /ct mark and 0x1 == 0x0 meta mark set meta mark and 0xfffffffe$/);
  assert.match(restores[3] ?? '', /ct mark and 0x4 == 0x4 meta mark set meta mark or 0x4$/);
});

test('NodePort support off removes the chain in the same transaction and adds no rule', () => {
  const script = nodePortScript({ ...cfg, enabled: false });
  assert.match(script, /flush chain ip vpcnet nodeport\ndelete chain ip vpcnet nodeport\n$/);
  assert.doesNotMatch(script, /add rule/);
});

test('link names and marks that could be nft syntax are refused', () => {
  assert.throws(() => nodePortScript({ ...cfg, primaryLink: 'eth0" accept' }), /invalid link name/);
  assert.throws(() => nodePortScript({ ...cfg, podLinkPrefixes: ['vpc }'] }), /invalid link name/);
  assert.throws(() => nodePortScript({ ...cfg, mark: 0 }), /connmark/);
  assert.throws(() => nodePortScript({ ...cfg, mark: 2 ** 32 }), /connmark/);
});

test("the policy rule is found among ip's JSON, also one with an earlier mark; other rules are not vpcnet's", () => {
  const listed = JSON.stringify([
    { priority: 0, src: 'all', table: 'local' },
    { priority: 1024, src: 'all', fwmark: '0x80', fwmask: '0x80', table: 'main' },
    { priority: 1024, src: 'all', fwmark: '0x40', table: 'main' },
    { priority: 1024, src: 'all', fwmark: '0x80', fwmask: '0x80', table: 'main', iif: 'eth1' },
    { priority: 1536, src: '10.0.0.5', table: '2' },
  ]);
  assert.deepEqual(parseNodePortRules(listed), [
    { mark: 0x80, mask: 0x80 },
    { mark: 0x40, mask: 0xffffffff },
  ]);
  assert.deepEqual(parseNodePortRules('not json'), []);
});

test('rule changes: add when missing, nothing when present, a stale mark goes, disabled removes', () => {
  const add = ['rule', 'add', 'prio', '1024', 'fwmark', '0x80/0x80', 'lookup', 'main'];
  assert.deepEqual(nodePortRuleChanges([], cfg), [add]);
  assert.deepEqual(nodePortRuleChanges([{ mark: 0x80, mask: 0x80 }], cfg), []);
  assert.deepEqual(nodePortRuleChanges([{ mark: 0x40, mask: 0x40 }], cfg), [
    ['rule', 'del', 'prio', '1024', 'fwmark', '0x40/0x40', 'lookup', 'main'],
    add,
  ]);
  assert.deepEqual(nodePortRuleChanges([{ mark: 0x80, mask: 0x80 }], { ...cfg, enabled: false }), [
    ['rule', 'del', 'prio', '1024', 'fwmark', '0x80/0x80', 'lookup', 'main'],
  ]);
});

test('rp_filter: strict (1) in effect is a problem naming what to set; loose or off is fine', () => {
  assert.match(rpFilterProblem('eth0', 0, 1) ?? '', /net\.ipv4\.conf\.eth0\.rp_filter=2/);
  assert.match(rpFilterProblem('eth0', 1, 0) ?? '', /conf\.all\.rp_filter=2/);
  assert.equal(rpFilterProblem('eth0', 0, 2), undefined);
  assert.equal(rpFilterProblem('eth0', 2, 1), undefined, 'the kernel uses the larger of all and the link');
  assert.equal(rpFilterProblem('eth0', 0, 0), undefined);
});
