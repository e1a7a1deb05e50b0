import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EniInfo } from '../../cloud/cloud.ts';
import {
  createdByVpcnet,
  INSTANCE_ID_TAG as INSTANCE_TAG,
  NO_MANAGE_TAG,
  unmanagedReason,
} from './eni-ownership.ts';

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

describe('MANAGE_UNTAGGED_ENI and the no_manage tag, in upstream order', () => {
  const strict = { manageUntagged: false, instanceId: 'i-self' };

  test('with MANAGE_UNTAGGED_ENI=false only ENIs tagged for this instance, or no_manage other than true, are used', () => {
    assert.equal(
      unmanagedReason(eni({}), strict),
      'not tagged node.k8s.amazonaws.com/instance_id=i-self (MANAGE_UNTAGGED_ENI=false)',
    );
    assert.match(String(unmanagedReason(eni({ tags: { [INSTANCE_TAG]: 'i-other' } }), strict)), /not tagged/);
    assert.equal(unmanagedReason(eni({ tags: { [INSTANCE_TAG]: 'i-self' } }), strict), undefined);
    assert.equal(unmanagedReason(eni({ tags: { [NO_MANAGE_TAG]: 'false' } }), strict), undefined);
    assert.equal(
      unmanagedReason(eni({ description: 'vpcnet: node i-self' }), strict),
      undefined,
      "vpcnet's own",
    );
    assert.equal(unmanagedReason(eni({}), { ...strict, manageUntagged: true }), undefined);
  });

  test('no_manage=true opts out even an ENI tagged for this instance; the primary ENI is always used', () => {
    const both = { [NO_MANAGE_TAG]: 'true', [INSTANCE_TAG]: 'i-self' };
    assert.equal(unmanagedReason(eni({ tags: both }), strict), `tagged ${NO_MANAGE_TAG}=true`);
    assert.equal(
      unmanagedReason(eni({ deviceNumber: 0, tags: { [NO_MANAGE_TAG]: 'true' } }), strict),
      undefined,
    );
    assert.equal(unmanagedReason(eni({ deviceNumber: 0 }), strict), undefined);
    assert.equal(
      unmanagedReason(eni({ interfaceType: 'trunk', tags: { [INSTANCE_TAG]: 'i-self' } })),
      'interface type trunk',
    );
  });
});
