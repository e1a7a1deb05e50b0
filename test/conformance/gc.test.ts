// CNI GC (1.1.0): every attachment of the named network that the runtime does not list in
// `cni.dev/valid-attachments` is removed, the listed ones and other networks' stay; success prints
// nothing; below 1.1.0 GC is refused with code 1 (libcni's skel: "config version does not allow
// GC"). The 1.1.0 spec tag named the key `cni.dev/attachments` and some libcni versions send only
// that one, so it must be read too. Each test uses a network name of its own, so that one GC never
// sees another test's pods.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, reaches, type TestPod, uniqueLabName } from '../lab-fixture.ts';
import { type Added, ConformanceRuntime } from './runtime.ts';
import { versionsBefore } from './spec-versions.ts';
import { expectError, expectNamed, expectQuietSuccess } from './wire-shapes.ts';

const V = '1.1.0';

interface Listed {
  readonly containerID: string;
  readonly ifname: string;
}

describe('conformance: GC', () => {
  const name = uniqueLabName('vpccfg');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  async function addIn(network: string, ifName = 'eth0', pod?: TestPod): Promise<[TestPod, Added]> {
    const p = pod ?? (await rt.newPod());
    return [p, await rt.add({ pod: p, version: V, ifName, config: { name: network } })];
  }

  function listed(pod: TestPod, ifname = 'eth0'): Listed {
    return { containerID: pod.containerId, ifname };
  }

  async function expectKept(pod: TestPod, added: Added): Promise<void> {
    const ips = (await rt.attachmentsOf(pod.containerId)).map((a) => a.ip);
    assert.ok(ips.includes(added.ip), `GC removed listed attachment ${pod.containerId} (${added.ip})`);
    assert.ok(await reaches(rt.vpcHost.netns, added.ip), `the VPC host no longer reaches ${added.ip}`);
  }

  test(`GC ${V} removes the network's attachments not in cni.dev/valid-attachments, keeps the listed ones, prints nothing`, async () => {
    const network = 'gc-listed';
    const [a, addedA] = await addIn(network);
    const [b, addedB] = await addIn(network);
    const [c, addedC] = await addIn(network);
    const valid = [listed(a), listed(c)];
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: network, 'cni.dev/valid-attachments': valid }),
    );
    assert.deepEqual(await rt.remainsOf(b, addedB), [], 'the unlisted attachment was not removed');
    await expectKept(a, addedA);
    await expectKept(c, addedC);
  });

  test(`GC ${V} with an empty list removes every attachment of the network`, async () => {
    const network = 'gc-empty';
    const pods = [await addIn(network), await addIn(network)];
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: network, 'cni.dev/valid-attachments': [] }),
    );
    for (const [pod, added] of pods) assert.deepEqual(await rt.remainsOf(pod, added), []);
  });

  test(`GC ${V} of one network leaves another network's attachments alone`, async () => {
    const [kept, addedKept] = await addIn('gc-other-kept');
    const [gone, addedGone] = await addIn('gc-other-collected');
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: 'gc-other-collected', 'cni.dev/valid-attachments': [] }),
    );
    assert.deepEqual(await rt.remainsOf(gone, addedGone), []);
    await expectKept(kept, addedKept);
  });

  test(`GC ${V} reading only cni.dev/attachments (the 1.1.0 tag's key) keeps the listed and removes the rest`, async () => {
    const network = 'gc-old-key';
    const [a, addedA] = await addIn(network);
    const [b, addedB] = await addIn(network);
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: network, 'cni.dev/attachments': [listed(a)] }),
    );
    assert.deepEqual(await rt.remainsOf(b, addedB), []);
    await expectKept(a, addedA);
  });

  test(`GC ${V} is keyed on (containerID, ifname): a listed container's unlisted eth1 goes, its eth0 stays`, async () => {
    const network = 'gc-ifname';
    const [pod, eth0] = await addIn(network);
    const [, eth1] = await addIn(network, 'eth1', pod);
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: network, 'cni.dev/valid-attachments': [listed(pod)] }),
    );
    assert.deepEqual(await rt.remainsOf(pod, eth1, 'eth1'), []);
    await expectKept(pod, eth0);
  });

  test(`DEL ${V} of an attachment GC removed still succeeds`, async () => {
    const network = 'gc-then-del';
    const [pod, added] = await addIn(network);
    expectQuietSuccess(
      await rt.runNetworkCommand('GC', V, { name: network, 'cni.dev/valid-attachments': [] }),
    );
    expectQuietSuccess(await rt.run('DEL', { pod, version: V, config: { name: network } }));
    assert.deepEqual(await rt.remainsOf(pod, added), []);
  });

  test(`GC ${V} without a list of valid attachments is refused with code 7 naming the key, removing nothing`, async () => {
    const network = 'gc-no-list';
    const [pod, added] = await addIn(network);
    const err = expectError(await rt.runNetworkCommand('GC', V, { name: network }), 7, V);
    expectNamed(err, 'cni.dev/valid-attachments');
    await expectKept(pod, added);
  });

  for (const v of versionsBefore('1.1.0')) {
    test(`GC ${v} is refused with code 1 naming the version, and removes nothing`, async () => {
      const network = `gc-refused-${v.replace(/\./g, '')}`;
      const [pod, added] = await addIn(network);
      const err = expectError(
        await rt.runNetworkCommand('GC', v, { name: network, 'cni.dev/valid-attachments': [] }),
        1,
        v,
      );
      expectNamed(err, v);
      expectNamed(err, 'GC');
      await expectKept(pod, added);
    });
  }
});
