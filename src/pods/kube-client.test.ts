// The client's transport against a scripted API server (TLS with a throwaway CA, a rotating token,
// a server that never answers) and against the emulator's Kubernetes slice (statuses).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { apiStatus, KubeApiError, KubeClient, MERGE_PATCH } from './kube-client.ts';
import { podObject, ScriptedKubeApi, sendJson, status } from './testing/scripted-kube-api.ts';
import { makeThrowawayCa, type ThrowawayCa } from './testing/throwaway-ca.ts';

let emu: TestEmulator;
let ca: ThrowawayCa;
before(async () => {
  emu = await startTestEmulator();
  ca = await makeThrowawayCa();
});
after(async () => {
  await emu.close();
  await ca.remove();
});

async function withApi(
  options: Parameters<typeof ScriptedKubeApi.start>[0],
  body: (api: ScriptedKubeApi) => Promise<void>,
): Promise<void> {
  const api = await ScriptedKubeApi.start(options);
  try {
    await body(api);
  } finally {
    await api.close();
  }
}

test('a pod the API does not have is a KubeApiError with status 404, naming the URL and the reason', async () => {
  const client = new KubeClient({ baseUrl: emu.url });
  try {
    const err = await client.getPod('default', 'never-there').then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof KubeApiError);
    assert.equal(apiStatus(err), 404);
    assert.match(
      err.message,
      /GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/default\/pods\/never-there/,
    );
    assert.match(err.message, /404 NotFound: pods "never-there" not found/);
  } finally {
    client.close();
  }
});

test('an API served with a certificate of the cluster CA is trusted through caFile, and only through it', async () => {
  await withApi({ tls: { key: ca.serverKey, cert: ca.serverCert } }, async (api) => {
    api.respond = (_req, res) => sendJson(res, 200, podObject('tls-0', '3'));
    const trusting = new KubeClient({ baseUrl: api.url, caFile: ca.caFile });
    const system = new KubeClient({ baseUrl: api.url });
    try {
      assert.equal((await trusting.getPod('default', 'tls-0')).uid, 'uid-tls-0');
      await assert.rejects(system.getPod('default', 'tls-0'), /certificate/);
      assert.equal(api.seen.length, 1, 'the untrusted server got no request');
    } finally {
      trusting.close();
      system.close();
    }
  });
});

test('a CA bundle that cannot be read fails the call naming the file', async () => {
  const client = new KubeClient({ baseUrl: 'https://127.0.0.1:1', caFile: join(ca.dir, 'missing.crt') });
  await assert.rejects(client.getNode('n1'), /CA bundle .*missing\.crt/);
});

test('the bearer token is sent, and a rotated token file is read again when the API answers 401', async () => {
  const tokenFile = join(ca.dir, 'token');
  await writeFile(tokenFile, 'token-1\n');
  await withApi({}, async (api) => {
    let accepted = 'Bearer token-1';
    api.respond = (req, res) => {
      if (req.authorization !== accepted)
        return sendJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
      sendJson(res, 200, podObject('tok-0', '4'));
    };
    const client = new KubeClient({ baseUrl: api.url, token: tokenFile });
    try {
      await client.getPod('default', 'tok-0');
      // The kubelet rotates the projected token; the old one stops working.
      await writeFile(tokenFile, 'token-2\n');
      accepted = 'Bearer token-2';
      assert.equal((await client.getPod('default', 'tok-0')).name, 'tok-0');
      assert.deepEqual(
        api.seen.map((r) => r.authorization),
        ['Bearer token-1', 'Bearer token-1', 'Bearer token-2'],
      );
      // A 401 the file cannot cure is the answer: no loop.
      accepted = 'Bearer token-3';
      const seen = api.seen.length;
      await assert.rejects(client.getPod('default', 'tok-0'), (e: unknown) => apiStatus(e) === 401);
      assert.equal(api.seen.length, seen + 1);
    } finally {
      client.close();
    }
  });
});

test('calls share kept-alive connections', async () => {
  await withApi({}, async (api) => {
    api.respond = (_req, res) => sendJson(res, 200, podObject('ka-0', '5'));
    const client = new KubeClient({ baseUrl: api.url });
    try {
      for (let i = 0; i < 5; i++) await client.getPod('default', 'ka-0');
      assert.equal(api.connections, 1);
    } finally {
      client.close();
    }
  });
});

test('a call the API never answers fails at its deadline, naming the URL', async () => {
  await withApi({}, async (api) => {
    api.respond = () => {};
    const client = new KubeClient({ baseUrl: api.url }, { timeoutMs: 200 });
    try {
      await assert.rejects(
        client.getPod('default', 'slow-0'),
        /GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/default\/pods\/slow-0: no answer within 200 ms/,
      );
    } finally {
      client.close();
    }
  });
});

test('request sends any call with its content type and gives back the parsed answer', async () => {
  await withApi({}, async (api) => {
    api.respond = (req, res) => sendJson(res, 200, { echoed: JSON.parse(req.body) as unknown });
    const client = new KubeClient({ baseUrl: api.url });
    try {
      const patch = { spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } };
      const answer = await client.request('PATCH', '/api/v1/nodes/n1', patch, MERGE_PATCH);
      assert.deepEqual(answer, { echoed: patch });
      assert.equal(api.seen[0]?.method, 'PATCH');
      assert.equal(api.seen[0]?.contentType, MERGE_PATCH);
    } finally {
      client.close();
    }
  });
});

test('an error answer that is not a Status still gives its status and text', async () => {
  await withApi({}, async (api) => {
    api.respond = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/html' });
      res.end('<html>upstream down</html>');
    };
    const client = new KubeClient({ baseUrl: api.url });
    try {
      await assert.rejects(
        client.getNode('n1'),
        (e: unknown) =>
          apiStatus(e) === 503 && /503 Service Unavailable: <html>upstream down/.test(String(e)),
      );
    } finally {
      client.close();
    }
  });
});
