import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCniArgs, podIdentityFrom } from './cni-args.ts';
import { CniError } from './errors.ts';

test('CNI_ARGS K=V pairs become a map, skipping empty segments', () => {
  const args = parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=default;;K8S_POD_NAME=web-0;');
  assert.deepEqual(
    [...args],
    [
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAMESPACE', 'default'],
      ['K8S_POD_NAME', 'web-0'],
    ],
  );
});

test('a CNI_ARGS value keeps any "=" after the first', () => {
  assert.equal(parseCniArgs('X=a=b').get('X'), 'a=b');
});

test('absent or empty CNI_ARGS is an empty map', () => {
  assert.equal(parseCniArgs(undefined).size, 0);
  assert.equal(parseCniArgs('').size, 0);
});

test('a CNI_ARGS pair without "=" or without a key fails with code 4', () => {
  for (const raw of ['K8S_POD_NAME', 'A=1;=x']) {
    assert.throws(
      () => parseCniArgs(raw),
      (e) => e instanceof CniError && e.code === 4,
      raw,
    );
  }
});

test('pod identity is taken from the K8S_POD_* args', () => {
  const args = parseCniArgs(
    'K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID=0b1c-uid;K8S_POD_INFRA_CONTAINER_ID=30c8abc',
  );
  assert.deepEqual(podIdentityFrom(args), {
    namespace: 'ns',
    name: 'p',
    uid: '0b1c-uid',
    infraContainerId: '30c8abc',
  });
});

test('pod identity omits uid and infra container when the runtime does not send them', () => {
  const pod = podIdentityFrom(parseCniArgs('K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID='));
  assert.deepEqual(pod, { namespace: 'ns', name: 'p' });
});

test('no pod identity without both namespace and name (cnitool, podman)', () => {
  assert.equal(podIdentityFrom(parseCniArgs('K8S_POD_NAME=p')), undefined);
  assert.equal(podIdentityFrom(parseCniArgs('')), undefined);
});
