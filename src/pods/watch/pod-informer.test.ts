// The informer's list+watch protocol against a scripted API server: resume after a closed watch,
// list again on 410, back off on errors, stop ends the open watch.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, test } from 'node:test';
import { silentLogger } from '../../infra/log.ts';
import { KubeClient } from '../kube-client.ts';
import {
  openWatch,
  podList,
  podObject,
  ScriptedKubeApi,
  type SeenRequest,
  sendJson,
  status,
} from '../testing/scripted-kube-api.ts';
import { PodInformer } from './pod-informer.ts';

let api: ScriptedKubeApi;
let client: KubeClient;
let informer: PodInformer | undefined;

beforeEach(async () => {
  api = await ScriptedKubeApi.start();
  client = new KubeClient({ baseUrl: api.url }, { timeoutMs: 5000 });
});
afterEach(async () => {
  await informer?.stop();
  informer = undefined;
  client.close();
  await api.close();
});

/** Warnings the informer logged, with their fields. */
let warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];

function start(extra: { idleMs?: number } = {}): PodInformer {
  warnings = [];
  informer = new PodInformer({
    client,
    nodeName: 'node-1',
    log: { ...silentLogger, warn: (msg, fields) => warnings.push({ msg, fields }) },
    retryMs: 20,
    maxRetryMs: 100,
    random: () => 0.5,
    ...extra,
  });
  void informer.start();
  return informer;
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function names(i: PodInformer): string[] {
  return i
    .list()
    .map((p) => p.name)
    .sort();
}

/** A script of watch answers, one per watch request, in order; lists answer from `list`. */
function script(list: (n: number) => unknown, watches: ((res: ServerResponse) => void)[]): void {
  let lists = 0;
  let next = 0;
  api.respond = (req: SeenRequest, res) => {
    if (!req.watch) return sendJson(res, 200, list(lists++));
    const answer = watches[next++];
    if (answer) answer(res);
    else openWatch(res); // further watches stay open and quiet
  };
}

test('the watch asks for this node, bookmarks and a server-side timeout', async () => {
  script(() => podList('7', ['a']), []);
  const i = start();
  await until(() => i.watching, 'watching');
  const [watch] = api.watches();
  assert.equal(watch?.query.get('fieldSelector'), 'spec.nodeName=node-1');
  assert.equal(watch?.query.get('resourceVersion'), '7');
  assert.equal(watch?.query.get('allowWatchBookmarks'), 'true');
  assert.ok(Number(watch?.query.get('timeoutSeconds')) > 0);
  assert.equal(api.lists()[0]?.query.get('fieldSelector'), 'spec.nodeName=node-1');
  assert.deepEqual(names(i), ['a']);
});

test('a watch the server closes is opened again from the last resourceVersion it delivered, without a list', async () => {
  script(
    () => podList('10', ['a']),
    [
      (res) => {
        openWatch(res)('ADDED', podObject('b', '11'));
        res.end();
      },
      (res) => openWatch(res)('DELETED', podObject('a', '12')),
    ],
  );
  const i = start();
  await until(() => names(i).join() === 'b', 'the second watch deleted a');
  const watches = api.watches();
  assert.equal(watches[0]?.query.get('resourceVersion'), '10');
  assert.equal(watches[1]?.query.get('resourceVersion'), '11', 'resumes after the event it saw');
  assert.equal(api.lists().length, 1, 'no list again');
  assert.equal(i.watching, true);
});

test('a bookmark moves the resume point without touching the pods', async () => {
  script(
    () => podList('10', ['a']),
    [
      (res) => {
        openWatch(res)('BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '30' } });
        res.end();
      },
    ],
  );
  const i = start();
  await until(() => api.watches().length >= 2, 'watched again');
  assert.equal(api.watches()[1]?.query.get('resourceVersion'), '30');
  assert.deepEqual(names(i), ['a']);
});

test('an ERROR event with 410 Expired makes the informer list again and drop pods the new list lacks', async () => {
  script(
    (n) => (n === 0 ? podList('5', ['a', 'b']) : podList('20', ['c'])),
    [(res) => openWatch(res)('ERROR', status(410, 'Expired', 'too old resource version: 5 (15)'))],
  );
  const i = start();
  await until(() => names(i).join() === 'c' && i.watching, 'listed again');
  assert.equal(api.lists().length, 2);
  assert.equal(api.watches()[1]?.query.get('resourceVersion'), '20', 'watches from the new list');
});

test('a watch answered 410 Gone as an HTTP status makes the informer list again', async () => {
  script(
    (n) => podList(n === 0 ? '5' : '21', n === 0 ? ['a'] : ['d']),
    [(res) => sendJson(res, 410, status(410, 'Gone', 'too old resource version'))],
  );
  const i = start();
  await until(() => names(i).join() === 'd' && i.watching, 'listed again');
  assert.equal(api.lists().length, 2);
  assert.equal(api.watches()[1]?.query.get('resourceVersion'), '21');
});

test('a failed watch is retried after a wait from the same resourceVersion; lookups are not served meanwhile', async () => {
  let failing = true;
  let watches = 0;
  api.respond = (req, res) => {
    if (!req.watch) return sendJson(res, 200, podList('40', ['a']));
    watches++;
    if (failing) return sendJson(res, 500, status(500, 'InternalError', 'etcd is down'));
    openWatch(res);
  };
  const i = start();
  await until(() => watches >= 3, 'retried twice');
  assert.equal(i.watching, false, 'no watch: the cache is not to be trusted');
  const before = watches;
  await new Promise((r) => setTimeout(r, 300));
  // Waits of 20, 40, 80, 100 ms: a handful of tries in 300 ms; without them, hundreds.
  assert.ok(watches - before < 15, `${watches - before} tries in 300 ms: no backoff`);
  failing = false;
  await until(() => i.watching, 'watching again');
  assert.ok(api.watches().every((w) => w.query.get('resourceVersion') === '40'));
  assert.equal(api.lists().length, 1);
  assert.equal(warnings[0]?.fields?.api, api.url, 'the warning names the API');
  assert.match(String(warnings[0]?.fields?.error), /500 InternalError: etcd is down/);
});

test('a list that fails is tried again until one succeeds', async () => {
  let lists = 0;
  api.respond = (req, res) => {
    if (req.watch) return openWatch(res);
    lists++;
    if (lists < 3) return res.destroy();
    sendJson(res, 200, podList('50', ['e']));
  };
  const i = start();
  await until(() => i.watching, 'watching');
  assert.equal(lists, 3);
  assert.deepEqual(names(i), ['e']);
});

test('a watch that sends nothing for idleMs is opened again', async () => {
  script(() => podList('60', ['a']), []);
  start({ idleMs: 200 });
  await until(() => api.watches().length >= 2, 'watched again after the silence');
  assert.equal(api.watches()[1]?.query.get('resourceVersion'), '60');
});

test('stop ends the open watch and the loop', async () => {
  script(() => podList('70', ['a']), []);
  const i = start();
  await until(() => i.watching && api.openResponses === 1, 'watching');
  await i.stop();
  informer = undefined;
  assert.equal(i.watching, false);
  await until(() => api.openResponses === 0, 'the server saw the watch close');
  const seen = api.seen.length;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(api.seen.length, seen, 'nothing is asked after stop');
});
