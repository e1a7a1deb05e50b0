// A CNINode as the API answers it is parsed at the edge: its features (a value only where there is
// one), whether it is marked for deletion; what is not a CNINode fails, naming the field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCniNode } from './cni-node.ts';

const meta = { name: 'n1', resourceVersion: '42' };

test('features are read with a value only where there is one, and a deletionTimestamp marks it deleting', () => {
  const parsed = parseCniNode(
    {
      metadata: meta,
      spec: {
        features: [
          { name: 'SecurityGroupsForPods', value: '' },
          { name: 'CustomNetworking', value: 'cfg' },
        ],
      },
    },
    'n1',
  );
  assert.deepEqual(parsed, {
    resourceVersion: '42',
    features: [{ name: 'SecurityGroupsForPods' }, { name: 'CustomNetworking', value: 'cfg' }],
    deleting: false,
  });
  assert.deepEqual(parseCniNode({ metadata: meta }, 'n1').features, [], 'no spec: no features');
  const marked = parseCniNode({ metadata: { ...meta, deletionTimestamp: '2026-01-01T00:00:00Z' } }, 'n1');
  assert.equal(marked.deleting, true);
});

test('an answer that is not a CNINode fails, naming the field', () => {
  assert.throws(
    () => parseCniNode({ metadata: { name: 'n1' } }, 'n1'),
    /CNINode n1: .*metadata\.resourceVersion/,
  );
  assert.throws(
    () => parseCniNode({ metadata: meta, spec: { features: { name: 'x' } } }, 'n1'),
    /CNINode n1: spec\.features is not a list/,
  );
  assert.throws(
    () => parseCniNode({ metadata: meta, spec: { features: [{ value: 'x' }] } }, 'n1'),
    /CNINode n1: spec\.features\[0\] has no name/,
  );
  assert.throws(
    () => parseCniNode({ metadata: meta, spec: { features: [{ name: 'a', value: 3 }] } }, 'n1'),
    /spec\.features\[0\]\.value is not a string/,
  );
});
