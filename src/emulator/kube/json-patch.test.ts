import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyJsonPatch } from './json-patch.ts';
import type { JsonObject } from './objects.ts';

const NODE: JsonObject = { metadata: { name: 'n1', labels: { a: '1' } }, spec: { taints: [{ key: 'x' }] } };

test('add, replace and remove follow JSON Pointers, with ~1 for a / inside a label key', () => {
  const out = applyJsonPatch(NODE, [
    { op: 'add', path: '/metadata/labels/vpc.amazonaws.com~1has-trunk-attached', value: 'false' },
    { op: 'replace', path: '/metadata/labels/a', value: '2' },
    { op: 'add', path: '/metadata/annotations', value: { k: 'v' } },
    { op: 'add', path: '/spec/taints/-', value: { key: 'y' } },
    { op: 'remove', path: '/spec/taints/0' },
    { op: 'test', path: '/metadata/name', value: 'n1' },
  ]);
  assert.deepEqual(out, {
    metadata: {
      name: 'n1',
      labels: { a: '2', 'vpc.amazonaws.com/has-trunk-attached': 'false' },
      annotations: { k: 'v' },
    },
    spec: { taints: [{ key: 'y' }] },
  });
  assert.deepEqual(NODE.metadata, { name: 'n1', labels: { a: '1' } }, 'the target is not changed in place');
});

test('a failed test, a missing path or an unsupported op rejects the whole patch with 422', () => {
  const cases: unknown[] = [
    [{ op: 'test', path: '/metadata/name', value: 'other' }],
    [{ op: 'replace', path: '/metadata/annotations/k', value: 'v' }],
    [{ op: 'remove', path: '/metadata/labels/missing' }],
    [{ op: 'move', from: '/a', path: '/b' }],
  ];
  for (const patch of cases) assert.throws(() => applyJsonPatch(NODE, patch), { code: 422 });
  assert.throws(() => applyJsonPatch(NODE, { op: 'add' }), { code: 400 });
});
