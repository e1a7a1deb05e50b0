// Pod presence with the agent's own client against the emulator's Kubernetes slice.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { kubePodPresence, PodPresenceError } from './pod-presence.ts';

let emu: TestEmulator;
before(async () => {
  emu = await startTestEmulator();
});
after(async () => {
  await emu.close();
});

function send(method: string, path: string, body?: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, emu.url),
      { method, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

function createPod(name: string, uid: string, nodeName: string): Promise<number> {
  return send('POST', '/api/v1/namespaces/default/pods', {
    metadata: { name, namespace: 'default', uid },
    spec: { nodeName, containers: [{ name: 'app', image: 'pause' }] },
  });
}

test('the API decides: the pod itself is present; 404, another UID or another node is absent', async () => {
  assert.equal(await createPod('here-0', 'u-here-0', 'node-p'), 201);
  assert.equal(await createPod('moved-0', 'u-moved-0', 'node-other'), 201);
  const presence = kubePodPresence({ baseUrl: emu.url }, 'node-p');
  assert.equal(await presence.presence({ namespace: 'default', name: 'here-0', uid: 'u-here-0' }), 'present');
  assert.equal(await presence.presence({ namespace: 'default', name: 'here-0' }), 'present');
  assert.equal(await presence.presence({ namespace: 'default', name: 'here-0', uid: 'u-older' }), 'absent');
  assert.equal(await presence.presence({ namespace: 'default', name: 'moved-0' }), 'absent');
  assert.equal(await presence.presence({ namespace: 'default', name: 'never-0' }), 'absent');
  assert.equal(await send('DELETE', '/api/v1/namespaces/default/pods/here-0'), 200);
  assert.equal(await presence.presence({ namespace: 'default', name: 'here-0', uid: 'u-here-0' }), 'absent');
});

test('an API that does not answer is no answer: the question fails, naming the API', async () => {
  const presence = kubePodPresence({ baseUrl: 'http://127.0.0.1:1' }, 'node-p', 1000);
  await assert.rejects(
    presence.presence({ namespace: 'default', name: 'web-0' }),
    (err: unknown) => err instanceof PodPresenceError && /127\.0\.0\.1:1/.test(err.message),
  );
});
