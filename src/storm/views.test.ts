import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAgentState, parseRoutes, parseRules } from './views.ts';

test('an attachment of a branch binding and the binding itself name the same binding key', () => {
  const view = parseAgentState({
    pid: 1,
    instanceId: 'i-1',
    attachments: [
      {
        keyString: 'vpcnet/c1/eth0',
        ip: '10.0.0.15',
        key: { containerId: 'c1' },
        branch: 'uid-1/eni-b',
        resources: [],
      },
    ],
    bindings: [{ key: { podUid: 'uid-1', eniId: 'eni-b' }, ip: '10.0.0.15', resources: [] }],
    pool: { enis: [] },
  });
  assert.equal(view.attachments[0]?.binding, 'uid-1/eni-b');
  assert.equal(view.bindings[0]?.key, 'uid-1/eni-b');
});

test('kernel routes and rules read from ip -j name their tables by number and addresses as CIDRs', () => {
  const routes = parseRoutes([
    { dst: 'default', dev: 'eth1', table: '2' },
    { dst: '10.0.0.5', dev: 'vpcaaa' },
    { type: 'local', dst: '10.0.0.4', dev: 'eth0', table: 'local' },
  ]);
  assert.deepEqual(routes, [
    { dst: 'default', dev: 'eth1', table: 2 },
    { dst: '10.0.0.5', dev: 'vpcaaa', table: 254 },
  ]);
  const rules = parseRules([
    { priority: 512, src: 'all', dst: '10.0.0.5', table: 'main' },
    { priority: 1536, src: '10.0.0.10', table: '2' },
  ]);
  assert.deepEqual(rules, [
    { priority: 512, from: undefined, to: '10.0.0.5/32', table: 254 },
    { priority: 1536, from: '10.0.0.10/32', to: undefined, table: 2 },
  ]);
});
