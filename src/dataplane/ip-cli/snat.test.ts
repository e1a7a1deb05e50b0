import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addSnatScript, parseSnatElements, removeSnatScript, setupNodeScript } from './snat.ts';

const node = { vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' };

test('setupNode script touches only table ip vpcnet and replaces its one rule', () => {
  const script = setupNodeScript({ vpcCidrs: ['10.0.0.0/16', '100.64.0.0/16'], snatSource: '10.0.0.10' });
  for (const line of script.trim().split('\n')) assert.match(line, / ip vpcnet( |$)/, line);
  assert.match(script, /flush chain ip vpcnet postrouting\n/);
  assert.match(script, /add element ip vpcnet vpc_cidrs \{ 10\.0\.0\.0\/16, 100\.64\.0\.0\/16 \}/);
  assert.match(
    script,
    /ip saddr @snat_pods ip daddr != @vpc_cidrs ip daddr != @snat_exclude snat to 10\.0\.0\.10 fully-random\n$/,
  );
  assert.doesNotMatch(script, /flush set ip vpcnet snat_pods|delete/, 'pod elements survive a re-run');
});

test('values that are not IPv4 never reach an nft script', () => {
  assert.throws(() => setupNodeScript({ vpcCidrs: ['10.0.0.0/16; flush ruleset'], snatSource: '10.0.0.10' }));
  assert.throws(() => setupNodeScript({ vpcCidrs: ['10.0.0.0/33'], snatSource: '10.0.0.10' }));
  assert.throws(() => setupNodeScript({ vpcCidrs: [], snatSource: '10.0.0.10 }' }));
  assert.throws(() => addSnatScript(['10.0.0.5 }']));
});

test('removing SNAT elements adds then deletes them, so a missing one does not abort the batch', () => {
  assert.equal(
    removeSnatScript(['10.0.0.5', '10.0.0.6']),
    'add element ip vpcnet snat_pods { 10.0.0.5, 10.0.0.6 }\ndelete element ip vpcnet snat_pods { 10.0.0.5, 10.0.0.6 }\n',
  );
});

test('SNAT set elements are read from nft JSON; an empty set has none, a missing set is undefined', () => {
  const meta = { metainfo: { version: '1.0.6' } };
  const withElems = { nftables: [meta, { set: { name: 'snat_pods', elem: ['10.0.0.5'] } }] };
  assert.deepEqual(parseSnatElements(JSON.stringify(withElems)), ['10.0.0.5']);
  assert.deepEqual(
    parseSnatElements(JSON.stringify({ nftables: [meta, { set: { name: 'snat_pods' } }] })),
    [],
  );
  assert.equal(parseSnatElements(JSON.stringify({ nftables: [meta] })), undefined);
  assert.equal(parseSnatElements(''), undefined);
});

test('each RANDOMIZESNAT mode maps to its nftables port flag; prng (upstream default) is fully-random', () => {
  const rule = (script: string) => script.trim().split('\n').at(-1);
  assert.match(rule(setupNodeScript(node)) ?? '', /snat to 10\.0\.0\.10 fully-random$/);
  assert.match(
    rule(setupNodeScript({ ...node, randomizeSnat: 'prng' })) ?? '',
    /snat to 10\.0\.0\.10 fully-random$/,
  );
  assert.match(
    rule(setupNodeScript({ ...node, randomizeSnat: 'hashrandom' })) ?? '',
    /snat to 10\.0\.0\.10 random$/,
  );
  assert.match(rule(setupNodeScript({ ...node, randomizeSnat: 'none' })) ?? '', /snat to 10\.0\.0\.10$/);
});

test('excluded CIDRs fill their own set, refilled on every run; none leaves it empty', () => {
  const script = setupNodeScript({ ...node, excludeCidrs: ['198.51.100.0/24', '203.0.113.7/32'] });
  assert.match(
    script,
    /flush set ip vpcnet snat_exclude\nadd element ip vpcnet snat_exclude \{ 198\.51\.100\.0\/24, 203\.0\.113\.7\/32 \}\n/,
  );
  const none = setupNodeScript(node);
  assert.match(none, /flush set ip vpcnet snat_exclude\n/);
  assert.doesNotMatch(none, /add element ip vpcnet snat_exclude/);
  assert.throws(() => setupNodeScript({ ...node, excludeCidrs: ['198.51.100.0/24 }'] }), /not an IPv4 CIDR/);
});
