// CNI CHECK (0.4.0 on): success in silence on a healthy attachment; tolerance of what later plugins
// in a chain add ("The plugin must allow for a later chained plugin to have modified networking
// resources, e.g. routes"); an error when what it created is missing; and refusal below 0.4.0 with
// code 1, as libcni's skel answers ("config version does not allow CHECK"). The lab's reconcile
// loop is off so that drift made by hand stays until CHECK looks.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, sh, uniqueLabName } from '../lab-fixture.ts';
import { link } from './kernel-view.ts';
import { ConformanceRuntime } from './runtime.ts';
import { versionsBefore, versionsFrom } from './spec-versions.ts';
import { expectError, expectNamed, expectQuietSuccess, type SuccessResult } from './wire-shapes.ts';

/** vpcnet's documented code for "the attachment differs from what it should be". */
const CODE_DRIFT = 110;

/** The ADD result as a later plugin (a second interface, an IPv6 address, extra routes) leaves it. */
function chainedResult(added: SuccessResult, netns: string): SuccessResult {
  const interfaces = [
    ...(added.interfaces ?? []),
    { name: 'net9', mac: '02:00:00:00:00:09', sandbox: netns },
  ];
  const extraIp = { address: '192.0.2.9/24', interface: interfaces.length - 1 };
  const extraIp6 = { address: '2001:db8::9/64', interface: interfaces.length - 1 };
  const pre100 = added.ips?.some((i) => i.version !== undefined) ?? false;
  return {
    ...added,
    interfaces,
    ips: [
      ...(added.ips ?? []),
      pre100 ? { ...extraIp, version: '4' } : extraIp,
      pre100 ? { ...extraIp6, version: '6' } : extraIp6,
    ],
    routes: [...(added.routes ?? []), { dst: '198.51.100.0/24', gw: '192.0.2.1' }],
    dns: { nameservers: ['192.0.2.53'] },
  };
}

describe('conformance: CHECK', () => {
  const name = uniqueLabName('vpccfc');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge', ['VPCNET_RECONCILE_SECONDS=0']);
  });
  after(async () => {
    await labDown(name);
  });

  for (const v of versionsFrom('0.4.0')) {
    test(`CHECK ${v} right after ADD, with the ADD result as prevResult, succeeds and prints nothing`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      expectQuietSuccess(await rt.run('CHECK', { pod, version: v, prevResult: result }));
    });

    test(`CHECK ${v} tolerates interfaces, IPs and routes later plugins added to prevResult`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      const prevResult = chainedResult(result, pod.netnsPath);
      expectQuietSuccess(await rt.run('CHECK', { pod, version: v, prevResult }));
    });

    test(`CHECK ${v} tolerates addresses, routes and interfaces later plugins added in the pod`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      const inPod = ['ip', '-n', pod.netnsName];
      await sh([...inPod, 'addr', 'add', '192.0.2.9/32', 'dev', 'eth0']);
      await sh([...inPod, 'route', 'add', '198.51.100.0/24', 'via', '169.254.1.1', 'dev', 'eth0']);
      await sh([...inPod, 'link', 'add', 'net9', 'type', 'veth', 'peer', 'name', 'net9p']);
      await sh([...inPod, 'link', 'set', 'lo', 'up']);
      expectQuietSuccess(await rt.run('CHECK', { pod, version: v, prevResult: result }));
    });

    test(`CHECK ${v} fails with code ${CODE_DRIFT} naming the address when the pod's address is gone`, async (t) => {
      const pod = await rt.newPod();
      const { result, ip } = await rt.attach(t, { pod, version: v });
      await sh(['ip', '-n', pod.netnsName, 'addr', 'del', `${ip}/32`, 'dev', 'eth0']);
      const err = expectError(await rt.run('CHECK', { pod, version: v, prevResult: result }), CODE_DRIFT, v);
      expectNamed(err, ip);
    });

    test(`CHECK ${v} fails with code ${CODE_DRIFT} when the host route to the pod is gone`, async (t) => {
      const pod = await rt.newPod();
      const { result, ip, hostVeth } = await rt.attach(t, { pod, version: v });
      await sh(['ip', '-n', rt.node.netns, 'route', 'del', `${ip}/32`, 'dev', hostVeth]);
      expectError(await rt.run('CHECK', { pod, version: v, prevResult: result }), CODE_DRIFT, v);
    });

    test(`CHECK ${v} fails when prevResult names, on vpcnet's own interface, an address the pod lacks`, async (t) => {
      const pod = await rt.newPod();
      const { result, ip } = await rt.attach(t, { pod, version: v });
      const other = ip === '10.0.15.250' ? '10.0.15.251' : '10.0.15.250';
      const prevResult = {
        ...result,
        ips: (result.ips ?? []).map((i) => (i.address === `${ip}/32` ? { ...i, address: `${other}/32` } : i)),
      };
      const err = expectError(await rt.run('CHECK', { pod, version: v, prevResult }), CODE_DRIFT, v);
      expectNamed(err, other);
    });
  }

  for (const v of versionsBefore('0.4.0')) {
    test(`CHECK ${v} is refused with code 1 naming the version, and the attachment is untouched`, async (t) => {
      const pod = await rt.newPod();
      const { result, ip } = await rt.attach(t, { pod, version: v });
      const err = expectError(await rt.run('CHECK', { pod, version: v, prevResult: result }), 1, v);
      expectNamed(err, v);
      expectNamed(err, 'CHECK');
      assert.ok((await link(pod.netnsName, 'eth0'))?.ipv4.includes(`${ip}/32`));
      assert.equal((await rt.attachmentsOf(pod.containerId)).length, 1);
    });
  }
});
