import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRules } from '../../dataplane/ip-cli/ip-json.ts';
import type { NodeView } from '../views.ts';
import { podRuleOf, ruleKind, ruleMatches } from './rule.ts';

test('only rules shaped exactly as vpcnet makes them count as pod rules', () => {
  // Real `ip -j rule show` output, including rules vpcnet never makes.
  const rules = parseRules([
    { priority: 512, src: 'all', dst: '10.0.0.5', table: 'main' },
    { priority: 1536, src: '10.0.0.5', table: '2' },
    { priority: 512, src: 'all', dst: '10.0.0.6', iif: 'lo', table: 'main' },
    { priority: 1536, src: '10.0.0.7', fwmark: '0x1', table: '2' },
    { priority: 1536, src: '10.0.0.0', srclen: 24, table: '2' },
    { priority: 1536, not: null, src: '10.0.0.8', table: '2' },
    { priority: 512, src: 'all', dst: '10.0.0.9', table: '3' },
    { priority: 32766, src: 'all', table: 'main' },
  ]);
  assert.deepEqual(rules.map(podRuleOf), [
    { priority: 512, to: '10.0.0.5/32', table: 254 },
    { priority: 1536, from: '10.0.0.5/32', table: 2 },
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});

test('a recorded rule matches the kernel rule with exactly its selectors, nothing more or less', () => {
  const [plain, withIif, wider] = parseRules([
    { priority: 512, src: 'all', dst: '10.0.0.5', table: 'main' },
    { priority: 512, src: 'all', dst: '10.0.0.5', iif: 'vpc1', table: 'main' },
    { priority: 512, src: 'all', dst: '10.0.0.0', dstlen: 24, table: 'main' },
  ]);
  const spec = { priority: 512, to: '10.0.0.5/32', table: 254 };
  assert.ok(plain && ruleMatches(plain, spec));
  assert.ok(withIif && !ruleMatches(withIif, spec));
  assert.ok(withIif && ruleMatches(withIif, { ...spec, iif: 'vpc1' }));
  assert.ok(wider && !ruleMatches(wider, spec));
  assert.ok(wider && ruleMatches(wider, { ...spec, to: '10.0.0.0/24' }));
});

test("GC offers no rule that a record owns, that names a protected address, or that another program's rule makes ambiguous", () => {
  const node: NodeView = {
    links: [],
    routes: [],
    neighbours: [],
    snatElements: [],
    rules: parseRules([
      { priority: 512, src: 'all', dst: '10.0.0.5', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.6', table: 'main' },
      { priority: 1536, src: '10.0.1.10', table: '2' },
      // Someone else's rule naming 10.0.0.7 makes `ip rule del to 10.0.0.7` ambiguous: skip it.
      { priority: 512, src: 'all', dst: '10.0.0.7', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.7', fwmark: '0x1', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.8', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.8', iif: 'lo', table: 'main' },
    ]),
  };
  const orphans = ruleKind.orphans?.(node, {
    vethPrefix: 'vpc',
    owns: (id) => id === 'rule 512 - 10.0.0.5/32 - 254',
    protectedAddresses: new Set(['10.0.1.10']),
  });
  assert.deepEqual(
    orphans?.map((o) => [o.identity, o.description]),
    [['rule 512 - 10.0.0.6/32 - 254', 'rule to 10.0.0.6 lookup main prio 512']],
  );
});
