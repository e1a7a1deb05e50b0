// Core v1 events in the Kubernetes slice: created in a namespace, read back by name, listed per
// namespace and across them (what a test reads to see the Events the agent reported).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function api(method: string, path: string, body?: unknown) {
  return t.kube(method, path, body);
}

function event(namespace: string, name: string, reason: string) {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: { kind: 'Pod', namespace, name: name.split('.')[0] },
    reason,
    message: `${reason} happened`,
    type: 'Normal',
  };
}

test('events are created in their namespace, read back, and listed per namespace and across namespaces', async () => {
  const created = await api('POST', '/api/v1/namespaces/shop/events', event('shop', 'web-0.1a', 'One'));
  assert.equal(created.status, 201);
  assert.equal((created.json.metadata as { namespace: string }).namespace, 'shop');
  assert.equal(
    (await api('POST', '/api/v1/namespaces/default/events', event('default', 'n1.2b', 'Two'))).status,
    201,
  );
  const read = await api('GET', '/api/v1/namespaces/shop/events/web-0.1a');
  assert.equal(read.status, 200);
  assert.equal(read.json.reason, 'One');
  const inShop = (await api('GET', '/api/v1/namespaces/shop/events')).json as {
    kind: string;
    items: { reason: string }[];
  };
  assert.equal(inShop.kind, 'EventList');
  assert.deepEqual(
    inShop.items.map((e) => e.reason),
    ['One'],
  );
  const all = (await api('GET', '/api/v1/events')).json as { items: { reason: string }[] };
  assert.deepEqual(all.items.map((e) => e.reason).sort(), ['One', 'Two']);
  const taken = await api('POST', '/api/v1/namespaces/shop/events', event('shop', 'web-0.1a', 'Again'));
  assert.equal(taken.status, 409, 'a second event of the same name was accepted');
});
