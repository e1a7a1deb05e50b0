// List and watch as @kubernetes/client-node 1.x's informer drives them: list with a field
// selector, then watch from the list's resourceVersion with allowWatchBookmarks and
// timeoutSeconds; a resourceVersion older than the event log gets 410 Expired.
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { IdSource, seededRandom } from '../vpc/ids.ts';
import { KubeApi } from './kube-api.ts';
import { NODE, ObjectStore, POD, ResourceVersionCounter } from './object-store.ts';

type Event = { type: string; object: { metadata: Record<string, unknown>; code?: number; reason?: string } };

let server: Server;
let base: string;
let pods: ObjectStore;
let nodes: ObjectStore;
let kube: KubeApi;

before(async () => {
  const ids = new IdSource(seededRandom(5));
  const versions = new ResourceVersionCounter();
  pods = new ObjectStore(POD, { ids, versions });
  nodes = new ObjectStore(NODE, { ids, versions, eventLogSize: 3 });
  kube = new KubeApi({ pods, nodes, bookmarkIntervalMs: 50 });
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => kube.handle(req, res, new URL(req.url ?? '/', 'http://kube'), body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  kube.closeWatches();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Reads a watch until the server ends it (or `stopAt` events arrived); returns the events. */
function readWatch(path: string, onOpen: () => void = () => {}, stopAt = Number.POSITIVE_INFINITY) {
  return new Promise<{ events: Event[]; endedByServer: boolean }>((resolve, reject) => {
    const events: Event[] = [];
    const req = request(`${base}${path}`, (res) => {
      assert.equal(res.statusCode, 200);
      onOpen();
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          events.push(JSON.parse(buf.slice(0, nl)) as Event);
          buf = buf.slice(nl + 1);
          if (events.length >= stopAt) {
            req.destroy();
            resolve({ events, endedByServer: false });
          }
        }
      });
      res.on('end', () => resolve({ events, endedByServer: true }));
    });
    req.on('error', (e) => {
      if (events.length < stopAt) reject(e);
    });
    req.end();
  });
}

test('an informer-style list and watch (fieldSelector, resourceVersion, allowWatchBookmarks, timeoutSeconds) gets changes, bookmarks and a clean end', async () => {
  pods.create('a', { metadata: { name: 'before' }, spec: { nodeName: 'n1' } });
  const selector = encodeURIComponent('spec.nodeName=n1');
  const list = (await (
    await fetch(`${base}/api/v1/pods?fieldSelector=${selector}&resourceVersion=0`)
  ).json()) as {
    kind: string;
    metadata: { resourceVersion: string };
    items: { metadata: { name: string } }[];
  };
  assert.equal(list.kind, 'PodList');
  assert.deepEqual(
    list.items.map((p) => p.metadata.name),
    ['before'],
  );
  const rv = list.metadata.resourceVersion;
  const watched = readWatch(
    `/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=1&allowWatchBookmarks=true&fieldSelector=${selector}`,
    () => {
      pods.create('a', { metadata: { name: 'mine' }, spec: { nodeName: 'n1' } });
      pods.create('a', { metadata: { name: 'other' }, spec: { nodeName: 'n2' } });
    },
  );
  const { events, endedByServer } = await watched;
  assert.ok(endedByServer, 'the server ends the watch after timeoutSeconds');
  const changes = events.filter((e) => e.type !== 'BOOKMARK');
  assert.deepEqual(
    changes.map((e) => [e.type, e.object.metadata.name]),
    [['ADDED', 'mine']],
  );
  const bookmarks = events.filter((e) => e.type === 'BOOKMARK');
  assert.ok(bookmarks.length >= 1, 'a quiet watch that allows bookmarks gets them');
  const last = bookmarks.at(-1)!;
  assert.deepEqual(Object.keys(last.object.metadata), ['resourceVersion']);
  assert.ok(
    Number(last.object.metadata.resourceVersion) >= Number(changes[0]?.object.metadata.resourceVersion),
  );
});

test('a watch without allowWatchBookmarks gets no BOOKMARK events', async () => {
  const { events } = await readWatch(
    '/api/v1/pods?watch=true&timeoutSeconds=1&fieldSelector=spec.nodeName%3Dnone',
  );
  assert.deepEqual(events, []);
});

test('a node watch from a resourceVersion older than the event log gets 410 Expired and ends', async () => {
  for (let k = 1; k <= 5; k++) nodes.create(undefined, { metadata: { name: `old-${k}` } });
  const { events, endedByServer } = await readWatch('/api/v1/nodes?watch=true&resourceVersion=2');
  assert.ok(endedByServer);
  assert.equal(events.length, 1);
  assert.equal(events[0]?.type, 'ERROR');
  assert.equal(events[0]?.object.code, 410);
  assert.equal(events[0]?.object.reason, 'Expired');
  // The list's resourceVersion is recent enough to watch from.
  const list = (await (await fetch(`${base}/api/v1/nodes`)).json()) as {
    metadata: { resourceVersion: string };
  };
  const resumed = readWatch(
    `/api/v1/nodes?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
    () => {
      nodes.patch(undefined, 'old-1', { metadata: { labels: { k: 'v' } } });
    },
    1,
  );
  const first = (await resumed).events[0];
  assert.equal(first?.type, 'MODIFIED');
  assert.equal(first?.object.metadata.name, 'old-1');
});
