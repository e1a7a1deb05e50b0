// CNI ADD to the letter, at every spec version vpcnet speaks: the result's version and shape, that
// it describes what is really in the kernel, CNI_IFNAME, prevResult on ADD (1.0.0+) and the
// version a runtime picks from a conflist's `cniVersions` (1.1.0).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, reaches, uniqueLabName } from '../lab-fixture.ts';
import { link, links, routes } from './kernel-view.ts';
import { ConformanceRuntime } from './runtime.ts';
import { ipsCarryVersion, negotiatedVersion, SPEC_VERSIONS, versionsFrom } from './spec-versions.ts';
import { checkResultShape, expectResult } from './wire-shapes.ts';

describe('conformance: ADD', () => {
  const name = uniqueLabName('vpccfa');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  for (const v of SPEC_VERSIONS) {
    test(`ADD ${v}: exits 0 and prints one result whose cniVersion is the configuration's (${v})`, async (t) => {
      const pod = await rt.newPod();
      t.after(() => rt.run('DEL', { pod, version: v }));
      expectResult(await rt.run('ADD', { pod, version: v }), v);
    });

    const ipVersion = ipsCarryVersion(v) ? 'every IP carries version "4"' : 'no IP carries "version"';
    test(`ADD ${v}: the result has only fields ${v} defines (${ipVersion})`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      checkResultShape(result, v);
      assert.ok((result.ips ?? []).length > 0, 'result lists no IP');
    });

    test(`ADD ${v}: every IP's interface index names the sandbox interface CNI_IFNAME in CNI_NETNS`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      const ips = result.ips ?? [];
      assert.ok(ips.length > 0, 'result lists no IP');
      for (const ip of ips) {
        assert.ok(ip.interface !== undefined, `IP ${ip.address} names no interface`);
        const iface = result.interfaces?.[ip.interface];
        assert.equal(iface?.name, 'eth0');
        assert.equal(iface?.sandbox, pod.netnsPath, 'sandbox is not the CNI_NETNS the runtime passed');
      }
    });

    test(`ADD ${v}: the interfaces it lists exist with those MACs; the pod's holds the address`, async (t) => {
      const pod = await rt.newPod();
      const { result, ip } = await rt.attach(t, { pod, version: v });
      for (const iface of result.interfaces ?? []) {
        const where = iface.sandbox ? pod.netnsName : rt.node.netns;
        const seen = await link(where, iface.name);
        assert.ok(seen, `interface ${iface.name} is not in ${where}`);
        if (iface.mac !== undefined) assert.equal(seen.mac, iface.mac, `MAC of ${iface.name}`);
      }
      const eth0 = await link(pod.netnsName, 'eth0');
      assert.ok(eth0?.ipv4.includes(`${ip}/32`), `eth0 lacks ${ip}/32: ${JSON.stringify(eth0)}`);
    });

    test(`ADD ${v}: every route it lists is in the pod, through the gateway it names`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v });
      const inPod = await routes(pod.netnsName);
      assert.ok((result.routes ?? []).length > 0, 'result lists no route');
      for (const r of result.routes ?? []) {
        const dst = r.dst === '0.0.0.0/0' ? 'default' : r.dst;
        const found = inPod.find((k) => k.dst === dst && (r.gw === undefined || k.gateway === r.gw));
        assert.ok(found, `route ${r.dst} via ${r.gw ?? '-'} is not in the pod: ${JSON.stringify(inPod)}`);
      }
    });

    test(`ADD ${v}: the pod reaches a VPC host from the address the result names`, async (t) => {
      const pod = await rt.newPod();
      const { ip } = await rt.attach(t, { pod, version: v });
      assert.ok(await reaches(pod.netnsName, rt.vpcHost.ip), `pod ${ip} cannot reach ${rt.vpcHost.ip}`);
      assert.ok(await reaches(rt.vpcHost.netns, ip), `the VPC host cannot reach pod ${ip}`);
    });

    test(`ADD ${v}: the pod's interface gets the name CNI_IFNAME gives (net7), and no eth0`, async (t) => {
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: v, ifName: 'net7' });
      const names = (await links(pod.netnsName)).map((l) => l.ifname);
      assert.ok(names.includes('net7'), `no net7 in the pod: ${names.join(', ')}`);
      assert.ok(!names.includes('eth0'), `eth0 created although CNI_IFNAME was net7: ${names.join(', ')}`);
      assert.ok(result.interfaces?.some((i) => i.name === 'net7' && i.sandbox === pod.netnsPath));
    });
  }

  for (const v of SPEC_VERSIONS) {
    test(`ADD ${v} without CNI_PATH and CNI_ARGS (optional, as under cnitool or podman) succeeds`, async (t) => {
      const pod = await rt.newPod();
      t.after(() => rt.run('DEL', { pod, version: v }));
      const env = {
        ...rt.attachmentEnv('ADD', { pod, version: v }),
        CNI_PATH: undefined,
        CNI_ARGS: undefined,
      };
      expectResult(await rt.exec(env, JSON.stringify(rt.pluginConfig(v))), v);
    });

    test(`ADD ${v} accepts the runtime's keys (args, runtimeConfig, cni.dev/*), unknown keys and unknown CNI_ARGS`, async (t) => {
      const pod = await rt.newPod();
      t.after(() => rt.run('DEL', { pod, version: v }));
      const conf = rt.pluginConfig(v, {
        args: { cni: { labels: [{ key: 'app', value: 'web' }] } },
        runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }] },
        'cni.dev/example': true,
        someFutureKey: { nested: [1, 2] },
      });
      const env = rt.attachmentEnv('ADD', { pod, version: v });
      const withArgs = { ...env, CNI_ARGS: `IgnoreUnknown=1;FOO=bar;${env.CNI_ARGS ?? ''}` };
      expectResult(await rt.exec(withArgs, JSON.stringify(conf)), v);
    });
  }

  // Spec 1.0.0, section 2 (ADD) and section 5 (Success): a plugin given a prevResult MUST output
  // it, with its own changes included. (0.3.x/0.4.0 allowed suppressing it explicitly.)
  for (const v of versionsFrom('1.0.0')) {
    test(`ADD ${v}: a prevResult is passed through, the plugin's interface and IP added to it`, async (t) => {
      const pod = await rt.newPod();
      const prevResult = {
        cniVersion: v,
        interfaces: [{ name: 'prevhost0' }, { name: 'net9', sandbox: pod.netnsPath }],
        ips: [{ address: '192.0.2.7/24', interface: 1 }],
        routes: [{ dst: '198.51.100.0/24', gw: '192.0.2.1' }],
        dns: { nameservers: ['192.0.2.53'] },
      };
      const { result, ip } = await rt.attach(t, { pod, version: v, prevResult });
      const names = (result.interfaces ?? []).map((i) => i.name);
      for (const want of ['prevhost0', 'net9', 'eth0'])
        assert.ok(names.includes(want), `result interfaces ${names.join(', ')} lack ${want}`);
      const byName = (address: string): string | undefined => {
        const entry = result.ips?.find((i) => i.address === address);
        return entry?.interface === undefined ? undefined : result.interfaces?.[entry.interface]?.name;
      };
      assert.equal(byName('192.0.2.7/24'), 'net9', 'the previous IP lost its interface');
      assert.equal(byName(`${ip}/32`), 'eth0', "vpcnet's IP does not point at its own interface");
      assert.ok(
        result.routes?.some((r) => r.dst === '198.51.100.0/24' && r.gw === '192.0.2.1'),
        'the previous route is gone',
      );
      assert.deepEqual(result.dns?.nameservers, ['192.0.2.53'], 'the previous DNS settings are gone');
    });
  }

  // Spec 1.1.0, section 1 (cniVersions): the runtime runs the list at the highest version both it and
  // the configuration support; the plugin must answer in exactly that version.
  const offered = ['0.3.1', '0.4.0', '1.0.0', '1.1.0'];
  const runtimes: [string, string[]][] = [
    ['0.3.1', ['0.3.0', '0.3.1']],
    ['0.4.0', ['0.3.0', '0.3.1', '0.4.0']],
    ['1.0.0', ['0.3.1', '0.4.0', '1.0.0']],
    ['1.1.0', [...SPEC_VERSIONS]],
  ];
  for (const [newest, supports] of runtimes) {
    const chosen = negotiatedVersion({ cniVersion: '0.4.0', cniVersions: offered }, supports);
    test(`conflist cniVersions [${offered.join(', ')}]: a runtime speaking up to ${newest} gets a ${chosen} result`, async (t) => {
      assert.equal(chosen, newest);
      const pod = await rt.newPod();
      const { result } = await rt.attach(t, { pod, version: newest });
      assert.equal(result.cniVersion, newest);
      checkResultShape(result, newest);
    });
  }

  test('the installed conflist names a version vpcnet speaks, and ADD at it succeeds', async (t) => {
    const chosen = negotiatedVersion(rt.conflist, SPEC_VERSIONS);
    assert.ok(chosen, `installed conflist offers no version vpcnet speaks: ${rt.conflist.cniVersion}`);
    const pod = await rt.newPod();
    const { result } = await rt.attach(t, { pod, version: chosen });
    assert.equal(result.cniVersion, chosen);
  });
});
