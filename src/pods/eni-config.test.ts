// Which ENIConfig a node names (upstream's precedence) and reading it through the API client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_ENI_CONFIG_KEY,
  ENI_CONFIG_API,
  EniConfigError,
  EXTERNAL_ENI_CONFIG_LABEL,
  eniConfigNameOf,
  KubeEniConfigs,
  parseEniConfigSpec,
} from './eni-config.ts';
import { KubeApiError } from './kube-client.ts';

const keys = { labelKey: 'topology.kubernetes.io/zone', annotationKey: DEFAULT_ENI_CONFIG_KEY };

test('the external label wins, then the annotation, then the label, else the ENIConfig called default', () => {
  const label = { 'topology.kubernetes.io/zone': 'us-west-2a' };
  const annotation = { [DEFAULT_ENI_CONFIG_KEY]: 'pods-a' };
  assert.equal(
    eniConfigNameOf({ ...label, [EXTERNAL_ENI_CONFIG_LABEL]: 'ext' }, annotation, keys).name,
    'ext',
  );
  assert.deepEqual(eniConfigNameOf(label, annotation, keys), {
    name: 'pods-a',
    chosenBy: `node annotation ${DEFAULT_ENI_CONFIG_KEY}`,
  });
  assert.deepEqual(eniConfigNameOf(label, {}, keys), {
    name: 'us-west-2a',
    chosenBy: 'node label topology.kubernetes.io/zone',
  });
  assert.equal(eniConfigNameOf({}, {}, keys).name, 'default');
});

test('an ENIConfig without a subnet or with malformed security groups is refused, naming it', () => {
  assert.throws(() => parseEniConfigSpec('x', { spec: {} }), /ENIConfig x has no spec.subnet/);
  assert.throws(
    () => parseEniConfigSpec('x', { spec: { subnet: 'subnet-1', securityGroups: 'sg-1' } }),
    /ENIConfig x: spec.securityGroups must be a list/,
  );
  assert.deepEqual(parseEniConfigSpec('x', { spec: { subnet: 'subnet-1' } }), {
    subnetId: 'subnet-1',
    securityGroupIds: [],
  });
});

function client(node: unknown, configs: Record<string, unknown>) {
  const asked: string[] = [];
  return {
    asked,
    getNode: (name: string) => {
      asked.push(`node ${name}`);
      return Promise.resolve(node);
    },
    request: (_method: string, path: string) => {
      asked.push(path);
      const name = decodeURIComponent(path.slice(ENI_CONFIG_API.length + 1));
      const found = configs[name];
      if (found === undefined) return Promise.reject(new KubeApiError(404, 'NotFound', `GET ${path}: 404`));
      return Promise.resolve(found);
    },
  };
}

test("the node's ENIConfig is read from the API on every call: node first, then the ENIConfig by name", async () => {
  const c = client(
    { metadata: { labels: { 'topology.kubernetes.io/zone': 'us-west-2a' } } },
    {
      'us-west-2a': { spec: { subnet: 'subnet-pods', securityGroups: ['sg-pods'] } },
    },
  );
  const source = new KubeEniConfigs(c, 'node-1', keys);
  const got = await source.current();
  assert.deepEqual(got, {
    name: 'us-west-2a',
    chosenBy: 'node label topology.kubernetes.io/zone',
    subnetId: 'subnet-pods',
    securityGroupIds: ['sg-pods'],
  });
  await source.current();
  assert.deepEqual(c.asked, [
    'node node-1',
    `${ENI_CONFIG_API}/us-west-2a`,
    'node node-1',
    `${ENI_CONFIG_API}/us-west-2a`,
  ]);
});

test('a missing ENIConfig is an EniConfigError naming it and how the node chose it', async () => {
  const source = new KubeEniConfigs(client({ metadata: {} }, {}), 'node-1', keys);
  await assert.rejects(
    source.current(),
    (err: unknown) =>
      err instanceof EniConfigError &&
      /^ENIConfig default \(no k8s.amazonaws.com\/eniConfig annotation nor topology.kubernetes.io\/zone label on the node\) does not exist$/.test(
        err.message,
      ),
  );
});
