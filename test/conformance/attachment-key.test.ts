// An attachment is (network, CNI_CONTAINERID, CNI_IFNAME), at every version: a repeated ADD of a
// live one fails (spec 1.0.0, ADD: "If an interface of the requested name already exists in the
// container, the CNI plugin MUST return with an error"), and another CNI_IFNAME in the same
// container is an attachment of its own ("a given container ID may be added to a specific network
// more than once only if each addition is done with a different interface name").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, reaches, sh, uniqueLabName } from '../lab-fixture.ts';
import { link, routeGet, routes, rules } from './kernel-view.ts';
import { ConformanceRuntime } from './runtime.ts';
import { SPEC_VERSIONS } from './spec-versions.ts';
import { expectError, expectFailure, expectNamed, expectQuietSuccess } from './wire-shapes.ts';

/** vpcnet's code for "this attachment exists already; DEL it first". */
const CODE_ATTACHMENT_EXISTS = 130;

function bare(cidrOrIp: string | undefined): string | undefined {
  return cidrOrIp?.replace(/\/32$/, '');
}

describe('conformance: attachment identity', () => {
  const name = uniqueLabName('vpccfk');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  for (const v of SPEC_VERSIONS) {
    test(`ADD ${v} repeated for a live attachment fails with code ${CODE_ATTACHMENT_EXISTS}; the first keeps its address and traffic`, async (t) => {
      const pod = await rt.newPod();
      const first = await rt.attach(t, { pod, version: v });
      const again = expectError(await rt.run('ADD', { pod, version: v }), CODE_ATTACHMENT_EXISTS, v);
      expectNamed(again, pod.containerId);
      expectNamed(again, 'eth0');
      expectNamed(again, 'DEL');
      const eth0 = await link(pod.netnsName, 'eth0');
      assert.ok(eth0?.ipv4.includes(`${first.ip}/32`), `eth0 lost ${first.ip}: ${JSON.stringify(eth0)}`);
      const records = await rt.attachmentsOf(pod.containerId);
      assert.deepEqual(
        records.map((a) => a.ip),
        [first.ip],
        'the ledger no longer holds exactly the first attachment',
      );
      assert.ok(await reaches(rt.vpcHost.netns, first.ip), `the VPC host no longer reaches ${first.ip}`);
    });

    test(`ADD ${v} when CNI_IFNAME already exists in the pod fails, leaving that interface; the runtime's DEL then succeeds`, async () => {
      const pod = await rt.newPod();
      await sh(['ip', '-n', pod.netnsName, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'theirs0']);
      const before = await link(pod.netnsName, 'eth0');
      // Spec 1.0.0, ADD: "If an interface of the requested name already exists in the container,
      // the CNI plugin MUST return with an error" (which error is the plugin's to choose).
      expectNamed(expectFailure(await rt.run('ADD', { pod, version: v }), v), 'eth0');
      assert.deepEqual(await link(pod.netnsName, 'eth0'), before, 'the existing eth0 was changed');
      assert.deepEqual(await rt.attachmentsOf(pod.containerId), [], 'the failed ADD left a ledger record');
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
      assert.deepEqual(
        await link(pod.netnsName, 'eth0'),
        before,
        'DEL removed an interface vpcnet did not create',
      );
    });

    test(`ADD ${v} of eth1 in the same pod: own address, a default route of higher metric, own table and from-rule; the VPC host reaches both`, async (t) => {
      const pod = await rt.newPod();
      const a = await rt.attach(t, { pod, version: v });
      const b = await rt.attach(t, { pod, version: v, ifName: 'eth1' });
      assert.notEqual(b.ip, a.ip, 'eth1 got the address of eth0');
      const ifaceOfB = b.result.ips?.[0]?.interface;
      assert.equal(ifaceOfB === undefined ? undefined : b.result.interfaces?.[ifaceOfB]?.name, 'eth1');
      assert.ok((await link(pod.netnsName, 'eth1'))?.ipv4.includes(`${b.ip}/32`), `eth1 lacks ${b.ip}/32`);
      assert.ok((await link(pod.netnsName, 'eth0'))?.ipv4.includes(`${a.ip}/32`), `eth0 lost ${a.ip}/32`);

      const defaults = (await routes(pod.netnsName)).filter((r) => r.dst === 'default');
      const viaEth0 = defaults.find((r) => r.dev === 'eth0');
      const viaEth1 = defaults.find((r) => r.dev === 'eth1');
      assert.ok(viaEth0 && viaEth1, `default routes in the pod: ${JSON.stringify(defaults)}`);
      assert.ok(
        (viaEth1.metric ?? 0) > (viaEth0.metric ?? 0),
        'eth1 default route does not have the higher metric',
      );

      const rule = (await rules(pod.netnsName)).find((r) => bare(r.src) === b.ip);
      assert.ok(rule, `no "from ${b.ip}" rule in the pod`);
      assert.ok(!['main', 'local', 'default'].includes(rule.table), `from-rule looks up ${rule.table}`);
      const own = await routes(pod.netnsName, rule.table);
      assert.ok(
        own.some((r) => r.dst === 'default' && r.dev === 'eth1'),
        `table ${rule.table} has no default via eth1`,
      );
      assert.equal((await routeGet(pod.netnsName, rt.vpcHost.ip, b.ip)).dev, 'eth1');
      assert.equal((await routeGet(pod.netnsName, rt.vpcHost.ip)).dev, 'eth0');
      for (const ip of [a.ip, b.ip])
        assert.ok(await reaches(rt.vpcHost.netns, ip), `the VPC host cannot reach the pod at ${ip}`);
    });

    test(`DEL ${v} of eth1 leaves eth0 with its address, default route and traffic`, async (t) => {
      const pod = await rt.newPod();
      const a = await rt.attach(t, { pod, version: v });
      const b = await rt.add({ pod, version: v, ifName: 'eth1' });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, ifName: 'eth1' }));
      assert.equal(await link(pod.netnsName, 'eth1'), undefined, 'eth1 is still in the pod');
      assert.ok((await link(pod.netnsName, 'eth0'))?.ipv4.includes(`${a.ip}/32`), `eth0 lost ${a.ip}/32`);
      const defaults = (await routes(pod.netnsName)).filter((r) => r.dst === 'default');
      assert.ok(
        defaults.some((r) => r.dev === 'eth0'),
        `no default route via eth0: ${JSON.stringify(defaults)}`,
      );
      assert.ok(!(await rules(pod.netnsName)).some((r) => bare(r.src) === b.ip), `eth1's rule is left`);
      const records = await rt.attachmentsOf(pod.containerId);
      assert.deepEqual(
        records.map((r) => r.ip),
        [a.ip],
      );
      assert.ok(await reaches(rt.vpcHost.netns, a.ip), `the VPC host no longer reaches ${a.ip}`);
      assert.ok(await reaches(pod.netnsName, rt.vpcHost.ip), 'the pod no longer reaches the VPC host');
    });
  }
});
