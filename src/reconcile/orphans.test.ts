import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeObservation } from '../dataplane/dataplane.ts';
import { parseRules } from '../dataplane/ip-json.ts';
import { findOrphans, podRuleOf } from './orphans.ts';

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
    { kind: 'rule', priority: 512, to: '10.0.0.5/32', table: 254 },
    { kind: 'rule', priority: 1536, from: '10.0.0.5/32', table: 2 },
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});

test('findOrphans offers nothing that an attachment owns or that is protected', () => {
  const node: NodeObservation = {
    veths: [
      { ifname: 'vpcaaaa', address: '', flags: [], mtu: 0, addresses: [] },
      { ifname: 'vpcbbbb', address: '', flags: [], mtu: 0, addresses: [] },
      { ifname: 'eni0', address: '', flags: [], mtu: 0, addresses: [] },
    ],
    routes: [],
    rules: parseRules([
      { priority: 512, src: 'all', dst: '10.0.0.5', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.6', table: 'main' },
      { priority: 1536, src: '10.0.1.10', table: '2' },
      // Someone else's rule naming 10.0.0.7 makes `ip rule del to 10.0.0.7` ambiguous: skip it.
      { priority: 512, src: 'all', dst: '10.0.0.7', table: 'main' },
      { priority: 512, src: 'all', dst: '10.0.0.7', iif: 'lo', table: 'main' },
    ]),
    snatElements: ['10.0.0.5', '10.0.0.6'],
  };
  const orphans = findOrphans(node, 'vpc', {
    ownsVeth: (n) => n === 'vpcaaaa',
    ownsAddress: (ip) => ip === '10.0.0.5',
    protectedAddresses: new Set(['10.0.1.10']),
  });
  assert.deepEqual(orphans, [
    { kind: 'veth', hostName: 'vpcbbbb' },
    { kind: 'rule', priority: 512, to: '10.0.0.6/32', table: 254 },
    { kind: 'snat', ip: '10.0.0.6' },
  ]);
});
