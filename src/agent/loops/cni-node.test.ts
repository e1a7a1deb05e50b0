// The agent keeps its node's CNINode as its settings say, against the emulator's Kubernetes API:
// created (owned by the node) with SecurityGroupsForPods under ENABLE_POD_ENI, and CustomNetworking
// naming the node's ENIConfig under custom networking too; features taken away when the settings
// drop them; other writers' features and fields kept; created again after a deletion; a write that
// another writer got in front of read again and written on top of it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { jsonLogger } from '../../infra/log.ts';
import { DEFAULT_ENI_CONFIG_KEY, KubeEniConfigs } from '../../pods/eni-config.ts';
import { KubeClient } from '../../pods/kube-client.ts';
import { CNI_NODE_API, type CniNodeFeature, type CniNodes, KubeCniNodes } from '../../pods/node/cni-node.ts';
import { racingCniNodes } from '../testing/racing-cni-nodes.ts';
import { CniNodeKeeper, featuresToWrite, wantedFeatures } from './cni-node.ts';

const SGP = { name: 'SecurityGroupsForPods' };
const cn = (value: string) => ({ name: 'CustomNetworking', value });

interface StoredCniNode {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    ownerReferences?: unknown[];
  };
  spec: { features?: CniNodeFeature[]; tags?: Record<string, string> };
}

let t: TestEmulator;
let client: KubeClient;
before(async () => {
  t = await startTestEmulator();
  client = new KubeClient({ baseUrl: t.url });
});
after(async () => {
  client.close();
  await t.close();
});

/** A node of the emulator's API (launching its instance registers it), with an ENIConfig label or none. */
async function node(name: string, eniConfig?: string): Promise<{ uid: string }> {
  await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: name });
  if (eniConfig !== undefined) await labelEniConfig(name, eniConfig);
  const got = await t.kube<{ metadata: { uid: string } }>('GET', `/api/v1/nodes/${name}`);
  return { uid: got.json.metadata.uid };
}

async function labelEniConfig(name: string, eniConfig: string): Promise<void> {
  const patch = { metadata: { labels: { [DEFAULT_ENI_CONFIG_KEY]: eniConfig } } };
  const r = await t.kube('PATCH', `/api/v1/nodes/${name}`, patch, 'application/merge-patch+json');
  assert.equal(r.status, 200);
}

async function stored(name: string): Promise<StoredCniNode | undefined> {
  const r = await t.kube<StoredCniNode>('GET', `${CNI_NODE_API}/${name}`);
  return r.status === 404 ? undefined : r.json;
}

/** Polls `probe` until it gives something (the keeper's loop runs on its own timer). */
async function eventually<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not seen in 10 s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function keeper(
  name: string,
  opts: { podEni: boolean; customNetworking?: boolean; cniNodes?: CniNodes; intervalMs?: number },
) {
  const lines: { level: string; msg: string; error?: string }[] = [];
  const configs = new KubeEniConfigs(client, name, {
    labelKey: DEFAULT_ENI_CONFIG_KEY,
    annotationKey: DEFAULT_ENI_CONFIG_KEY,
  });
  const k = new CniNodeKeeper({
    cniNodes: opts.cniNodes ?? new KubeCniNodes(client, name),
    podEni: opts.podEni,
    ...(opts.customNetworking === true ? { eniConfigName: async () => (await configs.chosen()).name } : {}),
    log: jsonLogger('debug', (l) => lines.push(JSON.parse(l) as (typeof lines)[number])),
    intervalMs: opts.intervalMs ?? 60_000,
  });
  return { k, lines };
}

describe('what the settings want', () => {
  test('each combination of pod ENIs and custom networking wants its features', () => {
    assert.deepEqual(wantedFeatures(false, undefined), []);
    assert.deepEqual(
      wantedFeatures(false, 'cfg'),
      [],
      'custom networking alone tells the controller nothing',
    );
    assert.deepEqual(wantedFeatures(true, undefined), [SGP]);
    assert.deepEqual(wantedFeatures(true, 'cfg'), [SGP, cn('cfg')]);
    assert.deepEqual(wantedFeatures(true, 'default'), [SGP, cn('default')]);
  });

  test("a write keeps other writers' features in their order, and is not made when nothing changes", () => {
    const other = { name: 'SomethingElse', value: 'x' };
    assert.equal(featuresToWrite([cn('a'), other, SGP], [SGP, cn('a')]), undefined);
    assert.deepEqual(featuresToWrite([other, cn('old')], [SGP, cn('new')]), [other, SGP, cn('new')]);
    assert.deepEqual(featuresToWrite([SGP, other, cn('a')], []), [other]);
    assert.deepEqual(featuresToWrite([SGP, SGP], [SGP]), [SGP], 'a feature listed twice is listed once');
    assert.equal(featuresToWrite([other], []), undefined);
  });
});

describe('the CNINode in the API', () => {
  test('with pod ENIs a missing CNINode is created, owned by the node, with SecurityGroupsForPods alone; the next pass changes nothing', async () => {
    const { uid } = await node('sgp-only');
    const { k, lines } = keeper('sgp-only', { podEni: true });
    assert.equal(k.told, false, 'nothing told before a pass');
    assert.equal(await k.check(), 'created');
    assert.equal(k.told, true);
    const made = await stored('sgp-only');
    assert.deepEqual(made?.spec.features, [SGP]);
    assert.deepEqual(made?.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: 'sgp-only', uid, controller: true },
    ]);
    assert.deepEqual(made?.metadata.labels, { 'kubernetes.io/os': 'linux' });
    assert.equal(await k.check(), 'unchanged');
    assert.equal((await stored('sgp-only'))?.metadata.resourceVersion, made?.metadata.resourceVersion);
    assert.ok(lines.some((l) => l.msg === 'CNINode created with the features the settings want'));
  });

  test("with custom networking too, CustomNetworking names the node's ENIConfig, `default` without a label, and a relabelled node's new one", async () => {
    await node('cn-node');
    const { k } = keeper('cn-node', { podEni: true, customNetworking: true });
    assert.equal(await k.check(), 'created');
    assert.deepEqual((await stored('cn-node'))?.spec.features, [SGP, cn('default')]);
    await labelEniConfig('cn-node', 'pods-a');
    assert.equal(await k.check(), 'updated');
    assert.deepEqual((await stored('cn-node'))?.spec.features, [SGP, cn('pods-a')]);
    await labelEniConfig('cn-node', 'pods-b');
    assert.equal(await k.check(), 'updated');
    assert.deepEqual((await stored('cn-node'))?.spec.features, [SGP, cn('pods-b')]);
  });

  test("the controller's CNINode keeps its own fields and another writer's feature; only the managed features change", async () => {
    const { uid } = await node('ctrl-made', 'pods-a');
    const controllerMade = {
      metadata: {
        name: 'ctrl-made',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'ctrl-made', uid, controller: true }],
      },
      spec: {
        tags: { 'cluster.k8s.amazonaws.com/name': 'prod' },
        features: [{ name: 'SomethingElse', value: 'x' }, cn('stale')],
      },
    };
    assert.equal((await t.kube('POST', CNI_NODE_API, controllerMade)).status, 201);
    const { k } = keeper('ctrl-made', { podEni: true, customNetworking: true });
    assert.equal(await k.check(), 'updated');
    const now = await stored('ctrl-made');
    assert.deepEqual(now?.spec.features, [{ name: 'SomethingElse', value: 'x' }, SGP, cn('pods-a')]);
    assert.deepEqual(now?.spec.tags, { 'cluster.k8s.amazonaws.com/name': 'prod' });
    assert.deepEqual(now?.metadata.ownerReferences, controllerMade.metadata.ownerReferences);
  });

  test('settings that drop a feature take it away: custom networking off, then pod ENIs off; with nothing to say no CNINode is created', async () => {
    await node('turned-off', 'pods-a');
    assert.equal(await keeper('turned-off', { podEni: true, customNetworking: true }).k.check(), 'created');
    assert.equal(await keeper('turned-off', { podEni: true }).k.check(), 'updated');
    assert.deepEqual((await stored('turned-off'))?.spec.features, [SGP]);
    assert.equal(await keeper('turned-off', { podEni: false, customNetworking: true }).k.check(), 'updated');
    assert.deepEqual((await stored('turned-off'))?.spec.features, []);

    await node('never-on', 'pods-a');
    assert.equal(await keeper('never-on', { podEni: false, customNetworking: true }).k.check(), 'absent');
    assert.equal(await stored('never-on'), undefined);
  });

  test('a deleted CNINode is created again by the next pass of the running keeper', async () => {
    await node('deleted');
    const { k } = keeper('deleted', { podEni: true, intervalMs: 50 });
    k.start();
    try {
      const first = await eventually(() => stored('deleted'), 'the CNINode created at start');
      assert.equal((await t.kube('DELETE', `${CNI_NODE_API}/deleted`)).status, 200);
      const again = await eventually(async () => {
        const s = await stored('deleted');
        return s !== undefined && s.metadata.uid !== first.metadata.uid ? s : undefined;
      }, 'the CNINode created again');
      assert.deepEqual(again.spec.features, [SGP]);
    } finally {
      await k.stop();
    }
  });

  test("a CNINode marked for deletion (the controller's finalizer holds it) is not written to; once it is gone the keeper creates it again", async () => {
    await node('finalized');
    const held = {
      metadata: { name: 'finalized', finalizers: ['networking.k8s.aws/resource-cleanup'] },
      spec: { features: [{ name: 'SomethingElse' }] },
    };
    assert.equal((await t.kube('POST', CNI_NODE_API, held)).status, 201);
    assert.equal((await t.kube('DELETE', `${CNI_NODE_API}/finalized`)).status, 200);
    const { k } = keeper('finalized', { podEni: true });
    const marked = await stored('finalized');
    assert.equal(await k.check(), 'deleting');
    assert.equal(k.told, false, 'a CNINode on its way out tells the controller nothing');
    assert.equal((await stored('finalized'))?.metadata.resourceVersion, marked?.metadata.resourceVersion);
    const release = { metadata: { finalizers: null } };
    assert.equal(
      (await t.kube('PATCH', `${CNI_NODE_API}/finalized`, release, 'application/merge-patch+json')).status,
      200,
    );
    assert.equal(await k.check(), 'created');
    assert.deepEqual((await stored('finalized'))?.spec.features, [SGP]);
  });

  test('a write another writer got in front of (the controller creating the CNINode, or adding a feature) is read again and made on top of it', async () => {
    const { uid } = await node('raced-create');
    const createdFirst = racingCniNodes(new KubeCniNodes(client, 'raced-create'), async () => {
      const body = {
        metadata: {
          name: 'raced-create',
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'raced-create', uid }],
        },
        spec: { tags: { owner: 'controller' } },
      };
      assert.equal((await t.kube('POST', CNI_NODE_API, body)).status, 201);
    });
    assert.equal(await keeper('raced-create', { podEni: true, cniNodes: createdFirst }).k.check(), 'updated');
    assert.equal(createdFirst.raced, 1);
    assert.deepEqual((await stored('raced-create'))?.spec, {
      tags: { owner: 'controller' },
      features: [SGP],
    });

    await node('raced-write', 'pods-a');
    assert.equal(await keeper('raced-write', { podEni: true }).k.check(), 'created');
    const changedFirst = racingCniNodes(new KubeCniNodes(client, 'raced-write'), async () => {
      const patch = { spec: { features: [SGP, { name: 'SomethingElse' }] } };
      const r = await t.kube('PATCH', `${CNI_NODE_API}/raced-write`, patch, 'application/merge-patch+json');
      assert.equal(r.status, 200);
    });
    const { k, lines } = keeper('raced-write', {
      podEni: true,
      customNetworking: true,
      cniNodes: changedFirst,
    });
    assert.equal(await k.check(), 'updated');
    assert.equal(changedFirst.raced, 1);
    assert.deepEqual((await stored('raced-write'))?.spec.features, [
      { name: 'SomethingElse' },
      SGP,
      cn('pods-a'),
    ]);
    assert.equal(lines.filter((l) => l.msg === 'CNINode features set as the settings want them').length, 1);
  });
});
