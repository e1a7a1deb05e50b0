import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ForwardedRequest } from '../../cni/wire.ts';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { KeyedSerializer } from '../../infra/keyed-serializer.ts';
import type { Resource } from '../../plan/resource.ts';
import { listPool, opContext } from '../testing/op-context.ts';
import { handleCni } from './cni-handler.ts';

function req(command: string, containerId: string, uid: string): ForwardedRequest {
  return {
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: `/var/run/netns/${containerId}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-${uid};K8S_POD_UID=${uid}`,
    },
    stdin: JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' }),
  };
}

/** A dataplane whose creates wait for the test to open the gate; it logs starts and ends. */
class GatedDataplane extends Dataplane {
  readonly events: string[] = [];
  gate: Promise<void> = Promise.resolve();
  override async create(netns: string, resources: readonly Resource[]): Promise<void> {
    this.events.push(`create start ${netns}`);
    await this.gate;
    await super.create(netns, resources);
    this.events.push(`create end ${netns}`);
  }
  override async remove(resources: readonly Resource[]): Promise<void> {
    this.events.push('remove');
    await super.remove(resources);
  }
}

test("one pod, one line: a DEL for the pod waits for its ADD in flight; another pod's ADD does not", async () => {
  const base = await opContext(listPool(['10.0.1.5', '10.0.1.6']));
  const dataplane = new GatedDataplane(base.kernel);
  const ctx = { ...base, dataplane };
  let open: () => void = () => {};
  dataplane.gate = new Promise((r) => (open = r));
  const deps = { ctx, serializer: new KeyedSerializer() };
  const add = handleCni(deps, req('ADD', 'a', 'u1'));
  const del = handleCni(deps, req('DEL', 'b', 'u1'));
  const other = handleCni(deps, req('ADD', 'c', 'u2'));
  while (dataplane.events.filter((e) => e.startsWith('create start')).length < 2) {
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(dataplane.events, ['create start /var/run/netns/a', 'create start /var/run/netns/c']);
  open();
  const results = await Promise.all([add, del, other]);
  assert.deepEqual(
    results.map((r) => r.exitCode),
    [0, 0, 0],
  );
  const removeAt = dataplane.events.indexOf('remove');
  assert.ok(removeAt > dataplane.events.indexOf('create end /var/run/netns/a'), dataplane.events.join(', '));
});
