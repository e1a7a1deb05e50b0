// deploy/admission as the API server would run it: rendered with `kubectl kustomize`, checked
// against the ValidatingAdmissionPolicy schemas, and its CEL evaluated (a CEL evaluator from npm)
// with `object`, `oldObject`, `request` and `variables` bound as the API server binds them, for
// every way a pod's vpc.amazonaws.com/pod-eni annotation can be set, changed or removed, by the
// resource controller's identities and by anyone else. Needs kubectl and python3-yaml, as the
// manifests' test (deploy-render.ts); outside CI it skips without them, under CI=true it fails.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { evaluate, parse } from '@marcbachmann/cel-js';
import type { IValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import type { IValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import { missingRenderTools, type Rendered, renderObjects } from './deploy-render.ts';

const underCi = process.env.CI === 'true' || process.env.CI === '1';
const missing = await missingRenderTools();
const skip = missing.length > 0 && !underCi ? `needs ${missing.join(', ')}` : false;

const ANNOTATION = 'vpc.amazonaws.com/pod-eni';
const CONTROLLERS = [
  'eks:vpc-resource-controller',
  'system:serviceaccount:kube-system:vpc-resource-controller',
  'system:serviceaccount:kube-system:eks-vpc-resource-controller',
];
const OTHERS = [
  'alice',
  'system:serviceaccount:default:deployer',
  'system:serviceaccount:kube-system:vpcnet',
];
const BRANCH = JSON.stringify([
  {
    eniId: 'eni-0a1b2c3d4e5f60718',
    ifAddress: '0a:00:00:00:b0:01',
    privateIp: '10.0.8.11',
    vlanId: 1,
    subnetCidr: '10.0.8.0/24',
  },
]);
const FORGED = BRANCH.replace('eni-0a1b2c3d4e5f60718', 'eni-0000000000000dead');

type Annotations = Record<string, string> | undefined;

function pod(annotations: Annotations): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-0', namespace: 'default', ...(annotations === undefined ? {} : { annotations }) },
    spec: { containers: [{ name: 'app', image: 'x' }] },
  };
}

interface Verdict {
  readonly allowed: boolean;
  readonly message?: string;
}

/** The policy's decision for one request, as the API server reaches it: variables in order, then each validation. */
function admit(
  policy: IValidatingAdmissionPolicy,
  operation: 'CREATE' | 'UPDATE',
  username: string,
  newAnnotations: Annotations,
  oldAnnotations?: Annotations,
): Verdict {
  const variables: Record<string, unknown> = {};
  const ctx = {
    object: pod(newAnnotations),
    oldObject: operation === 'CREATE' ? null : pod(oldAnnotations),
    request: { operation, userInfo: { username, groups: ['system:authenticated'] } },
    variables,
  };
  for (const v of policy.spec?.variables ?? []) variables[v.name] = evaluate(v.expression, ctx);
  for (const check of policy.spec?.validations ?? []) {
    if (evaluate(check.expression, ctx) !== true) {
      const message = check.messageExpression
        ? String(evaluate(check.messageExpression, ctx))
        : check.message;
      return { allowed: false, ...(message === undefined ? {} : { message }) };
    }
  }
  return { allowed: true };
}

describe('deploy/admission: only the VPC resource controller writes the pod-eni annotation', { skip }, () => {
  let objects: Rendered[] = [];
  let policy: IValidatingAdmissionPolicy;
  before(async () => {
    objects = await renderObjects('admission');
    const found = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy');
    assert.ok(found, 'the policy is rendered');
    policy = found as IValidatingAdmissionPolicy;
  });

  test('a policy and its binding, cluster-scoped, failing closed, matching every pod CREATE and UPDATE, enforced with Deny', () => {
    assert.deepEqual(
      objects.map((o) => o.kind),
      ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'],
    );
    for (const o of objects) assert.equal(o.metadata?.namespace, undefined, `${o.kind} carries a namespace`);
    assert.equal(policy.spec?.failurePolicy, 'Fail');
    assert.deepEqual(policy.spec?.matchConstraints?.resourceRules, [
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] },
    ]);
    assert.equal(policy.spec?.matchConstraints?.namespaceSelector, undefined, 'every namespace');
    const binding = objects[1] as IValidatingAdmissionPolicyBinding;
    assert.equal(binding.spec?.policyName, policy.metadata?.name);
    assert.deepEqual(binding.spec?.validationActions, ['Deny']);
    assert.equal(binding.spec?.matchResources, undefined, 'the binding narrows nothing');
  });

  test('every CEL expression of the policy parses', () => {
    const spec = policy.spec;
    const expressions = [
      ...(spec?.variables ?? []).map((v) => v.expression),
      ...(spec?.validations ?? []).flatMap((v) => [v.expression, v.messageExpression ?? "''"]),
    ];
    assert.ok(expressions.length >= 5);
    for (const e of expressions) assert.doesNotThrow(() => parse(e), e);
  });

  test('anyone else may not create a pod with the annotation, nor add, change or remove it', () => {
    for (const user of OTHERS) {
      const denied = [
        admit(policy, 'CREATE', user, { [ANNOTATION]: FORGED }),
        admit(policy, 'CREATE', user, { [ANNOTATION]: BRANCH, other: 'x' }),
        admit(policy, 'UPDATE', user, { [ANNOTATION]: FORGED }, undefined),
        admit(policy, 'UPDATE', user, { [ANNOTATION]: FORGED }, {}),
        admit(policy, 'UPDATE', user, { [ANNOTATION]: FORGED }, { [ANNOTATION]: BRANCH }),
        admit(policy, 'UPDATE', user, {}, { [ANNOTATION]: BRANCH }),
        admit(policy, 'UPDATE', user, undefined, { [ANNOTATION]: BRANCH }),
        admit(policy, 'UPDATE', user, { [ANNOTATION]: '' }, { [ANNOTATION]: BRANCH }),
      ];
      for (const [i, v] of denied.entries()) {
        assert.equal(v.allowed, false, `${user}, case ${i}`);
        assert.equal(
          v.message,
          `only the VPC resource controller may set, change or remove the vpc.amazonaws.com/pod-eni annotation; ${user} may not`,
        );
      }
    }
  });

  test('anyone may create and edit pods that leave the annotation as it is', () => {
    for (const user of OTHERS) {
      assert.equal(admit(policy, 'CREATE', user, undefined).allowed, true);
      assert.equal(admit(policy, 'CREATE', user, { team: 'a' }).allowed, true);
      assert.equal(admit(policy, 'UPDATE', user, { team: 'b' }, { team: 'a' }).allowed, true);
      assert.equal(admit(policy, 'UPDATE', user, undefined, undefined).allowed, true);
      assert.equal(
        admit(policy, 'UPDATE', user, { [ANNOTATION]: BRANCH, team: 'b' }, { [ANNOTATION]: BRANCH }).allowed,
        true,
        'a label or other annotation changes beside the controller’s',
      );
    }
  });

  test("the resource controller's identities may set, change and remove it", () => {
    for (const user of CONTROLLERS) {
      assert.equal(admit(policy, 'UPDATE', user, { [ANNOTATION]: BRANCH }, {}).allowed, true, user);
      assert.equal(
        admit(policy, 'UPDATE', user, { [ANNOTATION]: FORGED }, { [ANNOTATION]: BRANCH }).allowed,
        true,
      );
      assert.equal(admit(policy, 'UPDATE', user, {}, { [ANNOTATION]: BRANCH }).allowed, true);
      assert.equal(admit(policy, 'CREATE', user, { [ANNOTATION]: BRANCH }).allowed, true);
    }
  });
});
