import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EniInfo } from '../../cloud/cloud.ts';
import { createdByVpcnet, unmanagedReason } from './eni-ownership.ts';

function eni(extra: Partial<EniInfo>): EniInfo {
  return {
    eniId: 'eni-1',
    mac: '02:00:00:00:00:01',
    deviceNumber: 1,
    attachmentId: 'attach-1',
    subnetId: 'subnet-1',
    subnetCidr: '10.0.0.0/24',
    primaryIp: '10.0.0.11',
    secondaryIps: [],
    interfaceType: 'interface',
    tags: {},
    ...extra,
  };
}

test('unmanaged: trunk, efa and efa-only interfaces, and the no_manage=true tag; a plain interface is managed', () => {
  assert.equal(unmanagedReason(eni({})), undefined);
  assert.equal(unmanagedReason(eni({ interfaceType: 'trunk' })), 'interface type trunk');
  assert.equal(unmanagedReason(eni({ interfaceType: 'efa' })), 'interface type efa');
  assert.equal(unmanagedReason(eni({ interfaceType: 'efa-only' })), 'interface type efa-only');
  assert.equal(
    unmanagedReason(eni({ tags: { 'node.k8s.amazonaws.com/no_manage': 'true' } })),
    'tagged node.k8s.amazonaws.com/no_manage=true',
  );
  assert.equal(unmanagedReason(eni({ tags: { 'node.k8s.amazonaws.com/no_manage': 'TRUE ' } })), undefined);
});

test('created by vpcnet: its tag or its description marker, never the primary ENI', () => {
  assert.equal(createdByVpcnet(eni({ tags: { 'vpcnet.io/created-by': 'vpcnet' } })), true);
  assert.equal(createdByVpcnet(eni({ description: 'vpcnet: node i-1' })), true);
  assert.equal(createdByVpcnet(eni({ description: 'made by someone else' })), false);
  assert.equal(createdByVpcnet(eni({ tags: { 'vpcnet.io/created-by': 'someone' } })), false);
  assert.equal(
    createdByVpcnet(eni({ deviceNumber: 0, tags: { 'vpcnet.io/created-by': 'vpcnet' } })),
    false,
    'ownership: the primary ENI is never vpcnet’s to delete',
  );
});
