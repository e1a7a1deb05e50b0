// Ledger files written before the pod plan (schema 1) are read into the same plan an ADD makes now.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostVethMac } from '../../plan/names.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import { LEDGER_SCHEMA_VERSION, parseLedgerSnapshot } from './snapshot.ts';

const key = { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' };

test('a schema-1 attachment becomes the pod plan its ADD built, pod side included', () => {
  const v1 = {
    schemaVersion: 1,
    attachments: [
      {
        key,
        pod: { namespace: 'default', name: 'web-0' },
        netns: '/var/run/netns/p1',
        ip: '10.0.0.5',
        eniId: 'eni-1',
        routeTable: 2,
        hostVeth: 'vpc0123456789ab',
        mtu: 9001,
        createdAt: 1000,
        resources: [
          { kind: 'address', ip: '10.0.0.5', eniId: 'eni-1' },
          { kind: 'veth', hostName: 'vpc0123456789ab' },
          { kind: 'hostRoute', dst: '10.0.0.5/32', dev: 'vpc0123456789ab' },
          { kind: 'rule', priority: 512, to: '10.0.0.5/32', table: 254 },
          { kind: 'rule', priority: 1536, from: '10.0.0.5/32', table: 2 },
          { kind: 'snat', ip: '10.0.0.5' },
        ],
      },
    ],
    cooling: [{ ip: '10.0.0.9', eniId: 'eni-1', freedAt: 500 }],
  };
  const snapshot = parseLedgerSnapshot(v1);
  const now = planRegularPod({
    key,
    vethPrefix: 'vpc',
    ip: '10.0.0.5',
    eniId: 'eni-1',
    routeTable: 2,
    mtu: 9001,
    snat: true,
  });
  const withoutPodMac = now.map((r) => {
    if (r.kind !== 'veth') return r;
    const { podMac: _, ...rest } = r;
    return { ...rest, hostName: 'vpc0123456789ab' };
  });
  const att = snapshot.attachments[0];
  assert.deepEqual(
    att?.resources,
    withoutPodMac.map((r) =>
      r.kind === 'route' && r.side === 'node' ? { ...r, dev: 'vpc0123456789ab' } : r,
    ),
  );
  assert.equal(att?.createdAt, 1000);
  assert.deepEqual(snapshot.cooling, v1.cooling);
  assert.equal(snapshot.schemaVersion, LEDGER_SCHEMA_VERSION, 'the next write is the current schema');
  assert.ok(att?.resources.some((r) => r.kind === 'neighbour' && r.lladdr === hostVethMac(key)));
});
