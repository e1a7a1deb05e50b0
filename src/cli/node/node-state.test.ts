import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printer } from '../output.ts';
import { recordedState } from '../testing/fake-agent-socket.ts';
import { parseNodeState } from './node-state.ts';
import { podsTable } from './pods.ts';

test('a recorded state reads into pool figures, ENIs with their addresses and attachment rows', async () => {
  const s = parseNodeState(await recordedState('healthy-state'));
  assert.equal(s.instanceId, 'i-0fake');
  assert.deepEqual(
    { total: s.pool.total, assigned: s.pool.assigned, available: s.pool.available },
    { total: 11, assigned: 2, available: 9 },
  );
  assert.equal(s.enis[0]?.eniId, 'eni-primary');
  assert.equal(s.enis[0]?.addresses.length, 11);
  assert.deepEqual(
    s.enis[0]?.addresses.filter((a) => a.kind === 'assigned').map((a) => a.owner),
    ['vpcnet/c1aaaaaaaaaaaaaaaaaaaa/eth0', 'vpcnet/c2bbbbbbbbbbbbbbbbbbbb/eth0'],
  );
  const web = s.attachments.find((a) => a.pod === 'web-0');
  assert.equal(web?.namespace, 'default');
  assert.equal(web?.ip, '10.0.0.11');
  assert.match(web?.hostVeth ?? '', /^vpc/);
});

test('a branch-ENI attachment takes its address, branch ENI and VLAN from its binding', () => {
  const s = parseNodeState({
    attachments: [
      {
        key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' },
        pod: { namespace: 'shop', name: 'db-0', uid: 'u1' },
        branch: 'u1/eni-0b1',
        hostVeth: 'vpc0a',
        createdAt: 1,
      },
    ],
    bindings: [{ key: { podUid: 'u1', eniId: 'eni-0b1' }, vlanId: 7, ip: '10.0.8.11' }],
  });
  assert.deepEqual(s.attachments[0]?.branch, { key: 'u1/eni-0b1', eniId: 'eni-0b1', vlanId: 7 });
  assert.equal(s.attachments[0]?.ip, '10.0.8.11');
  const row = podsTable(s.attachments, 2, printer(false)).split('\n')[1] ?? '';
  assert.match(
    row,
    /^shop\/db-0\s+c1\s+eth0\s+10\.0\.8\.11\s+eni-0b1 \(branch, VLAN 7\)\s+vpc0a\s+ready\s+0s$/,
  );
});
