// vpcnet as the first plugin of a conflist, followed by Debian's reference plugins (portmap,
// bandwidth, tuning from containernetworking-plugins 1.1.1), in a one-node lab. The chain is run as
// libcni runs it (src/lab/cni-runtime.ts): capability args reach only the plugins that declare them,
// ADD passes each result on as the next prevResult, DEL runs in reverse. The conflist is the one
// `vpcnetctl install --bandwidth` writes, with tuning appended.
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type ChainStep,
  type CniCall,
  type NetConfList,
  PluginFailed,
  runChain,
} from '../../src/lab/cni-runtime.ts';
import {
  agentState,
  ctl,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  podCall,
  sh,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';
import {
  ingressRedirects,
  ipv4Address,
  kernelHasIfb,
  links,
  listenInPod,
  natRules,
  qdiscs,
  sysctl,
  tcpFetch,
} from './chaining-probes.ts';

const REFERENCE_PLUGINS = '/usr/lib/cni';
const HOST_PORT = 18080;
const CONTAINER_PORT = 8080;
const GREETING = 'hello from the pod behind portmap';
/** bits/s and bits, as the bandwidth plugin takes them; tc shows bytes. */
const INGRESS = { rate: 8_000_000, burst: 800_000 };
const EGRESS = { rate: 16_000_000, burst: 1_600_000 };
const TUNED_MTU = 1400;
/** Off by default in a new namespace; tuning turns it on for the pod's interface only. */
const TUNED_SYSCTL = 'net.ipv4.conf.eth0.log_martians';

interface CniResult {
  interfaces: { name: string; sandbox?: string }[];
  ips: { address: string; interface?: number }[];
}

describe('vpcnet chained with the reference portmap, bandwidth and tuning plugins', () => {
  const name = uniqueLabName('vpcch');
  let node: LabNodeDesc;
  let dataDir: string;
  let installed: NetConfList;
  let withBandwidth: NetConfList;
  let tuning: Record<string, unknown>;
  let ifb: boolean;

  before(async () => {
    await labDown(name);
    // The reconcile loop would repair the drift the CHECK test makes by hand.
    const lab = await labUp(name, ['--agent-env', 'VPCNET_RECONCILE_SECONDS=0']);
    node = lab.nodes[0]!;
    dataDir = await mkdtemp(`/tmp/${name}-`);
    installed = JSON.parse(
      await readFile(join(node.cniConfDir, '10-vpcnet.conflist'), 'utf8'),
    ) as NetConfList;
    const vpcnet = installed.plugins[0]!;
    // What an operator runs to add bandwidth: install again, into the node's bin dir.
    await ctl([
      'install',
      '--cni-bin-dir',
      node.cniBinDir,
      '--cni-conf-dir',
      join(dataDir, 'net.d'),
      '--agent-socket',
      String(vpcnet.agentSocket),
      '--del-spool-dir',
      String(vpcnet.delSpoolDir),
      '--bandwidth',
    ]);
    withBandwidth = JSON.parse(
      await readFile(join(dataDir, 'net.d', '10-vpcnet.conflist'), 'utf8'),
    ) as NetConfList;
    await copyFile(join(REFERENCE_PLUGINS, 'tuning'), join(node.cniBinDir, 'tuning'));
    tuning = {
      type: 'tuning',
      mtu: TUNED_MTU,
      sysctl: { [TUNED_SYSCTL]: '1' },
      dataDir: join(dataDir, 'tuning'),
    };
    ifb = await kernelHasIfb(`${name}-ifbprobe`);
  });
  after(async () => {
    await labDown(name);
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  function chain(plugins: readonly Record<string, unknown>[]): NetConfList {
    return { cniVersion: withBandwidth.cniVersion, name: withBandwidth.name, plugins };
  }

  function call(pod: TestPod, command: CniCall['command'], capabilityArgs: Record<string, unknown>): CniCall {
    const base = podCall(node, command, pod);
    // As containerd sends them: tuning refuses CNI_ARGS it does not know unless told to ignore them.
    return { ...base, args: { IgnoreUnknown: '1', ...base.args }, capabilityArgs };
  }

  test('the lab installs the conflist with portmap after vpcnet, and portmap beside vpcnet', async () => {
    assert.deepEqual(
      installed.plugins.map((p) => p.type),
      ['vpcnet', 'portmap'],
    );
    assert.deepEqual(installed.plugins[1], {
      type: 'portmap',
      capabilities: { portMappings: true },
      snat: true,
    });
    assert.deepEqual(
      (await readdir(node.cniBinDir)).filter((f) => f === 'portmap'),
      ['portmap'],
    );
    assert.deepEqual(
      withBandwidth.plugins.map((p) => p.type),
      ['vpcnet', 'portmap', 'bandwidth'],
    );
  });

  describe('a pod added through vpcnet → portmap → bandwidth → tuning', () => {
    let pod: TestPod;
    let full: NetConfList;
    let capabilityArgs: Record<string, unknown>;
    const addSteps: ChainStep[] = [];
    let final: CniResult;
    let vpcnetResult: CniResult;
    let hostVeth: string;
    let podIp: string;

    before(async () => {
      pod = await newPod(name, 'chain');
      full = chain([...withBandwidth.plugins, tuning]);
      const bandwidth = ifb
        ? {
            ingressRate: INGRESS.rate,
            ingressBurst: INGRESS.burst,
            egressRate: EGRESS.rate,
            egressBurst: EGRESS.burst,
          }
        : { ingressRate: INGRESS.rate, ingressBurst: INGRESS.burst };
      capabilityArgs = {
        portMappings: [{ hostPort: HOST_PORT, containerPort: CONTAINER_PORT, protocol: 'tcp' }],
        bandwidth,
      };
      final = (await runChain(call(pod, 'ADD', capabilityArgs), full, undefined, (s) =>
        addSteps.push(s),
      )) as CniResult;
      vpcnetResult = JSON.parse(addSteps[0]!.output.stdout) as CniResult;
      hostVeth = vpcnetResult.interfaces.find((i) => i.sandbox === undefined)!.name;
      podIp = vpcnetResult.ips[0]!.address.split('/')[0]!;
    });

    test("each later plugin's ADD gets the previous result, and the final result keeps vpcnet's interfaces and IPs", async () => {
      assert.deepEqual(
        addSteps.map((s) => s.plugin),
        ['vpcnet', 'portmap', 'bandwidth', 'tuning'],
      );
      assert.equal(Object.hasOwn(addSteps[0]!.config, 'prevResult'), false, 'vpcnet got a prevResult on ADD');
      for (const [i, step] of addSteps.entries()) {
        if (i === 0) continue;
        assert.deepEqual(step.config.prevResult, JSON.parse(addSteps[i - 1]!.output.stdout), step.plugin);
        const prev = step.config.prevResult as CniResult;
        assert.deepEqual(prev.ips, vpcnetResult.ips, `${step.plugin}'s prevResult lost vpcnet's IPs`);
        assert.deepEqual(prev.interfaces.slice(0, vpcnetResult.interfaces.length), vpcnetResult.interfaces);
      }
      // libcni's capability gate: only the plugin that declares a capability receives it.
      assert.deepEqual(addSteps[1]!.config.runtimeConfig, { portMappings: capabilityArgs.portMappings });
      assert.deepEqual(addSteps[2]!.config.runtimeConfig, { bandwidth: capabilityArgs.bandwidth });
      assert.equal(addSteps[0]!.config.runtimeConfig, undefined);
      assert.deepEqual(final.ips, vpcnetResult.ips);
      assert.deepEqual(final.interfaces.slice(0, vpcnetResult.interfaces.length), vpcnetResult.interfaces);
      const state = await agentState(node);
      assert.equal(state.attachments.find((a) => a.key.containerId === pod.containerId)?.hostVeth, hostVeth);
    });

    test("a hostPort reaches the pod's listener from the node's own address and from localhost (snat)", async (t) => {
      const listener = await listenInPod(pod.netnsName, CONTAINER_PORT, GREETING);
      try {
        const nodeIp = await ipv4Address(node.netns, 'eth0');
        assert.equal(await tcpFetch(node.netns, nodeIp, HOST_PORT), GREETING);
        assert.equal(await tcpFetch(node.netns, '127.0.0.1', HOST_PORT), GREETING);
        t.diagnostic(`node ${nodeIp}:${HOST_PORT} → pod ${podIp}:${CONTAINER_PORT}`);
      } finally {
        await listener.close();
      }
      assert.match(
        await natRules(node.netns),
        new RegExp(`DNAT --to-destination ${podIp}:${CONTAINER_PORT}`),
      );
    });

    test('the bandwidth limit sits on the host veth vpcnet reports (egress through an ifb when the kernel has one)', async (t) => {
      const onVeth = await qdiscs(node.netns, hostVeth);
      const tbf = onVeth.find((q) => q.kind === 'tbf' && q.root === true);
      assert.ok(tbf, `no root tbf on ${hostVeth}: ${JSON.stringify(onVeth)}`);
      assert.equal(tbf.options?.rate, INGRESS.rate / 8);
      if (!ifb) {
        t.diagnostic('this kernel makes no ifb devices: ingressRate (tbf) tested, egressRate not');
        return;
      }
      t.diagnostic('ifb available: ingressRate (tbf on the veth) and egressRate (tbf on an ifb) tested');
      assert.ok(
        onVeth.some((q) => q.kind === 'ingress'),
        `no ingress qdisc on ${hostVeth}`,
      );
      const redirects = await ingressRedirects(node.netns, hostVeth);
      const ifbDev = redirects[0]?.to_dev;
      assert.ok(ifbDev, `${hostVeth}'s ingress is not redirected: ${JSON.stringify(redirects)}`);
      assert.equal((await links(node.netns)).find((l) => l.ifname === ifbDev)?.linkinfo?.info_kind, 'ifb');
      const onIfb = await qdiscs(node.netns, ifbDev);
      assert.equal(onIfb.find((q) => q.kind === 'tbf')?.options?.rate, EGRESS.rate / 8);
    });

    test("tuning's MTU and sysctl land on the pod's interface, not on the host veth", async () => {
      assert.equal((await links(pod.netnsName)).find((l) => l.ifname === 'eth0')?.mtu, TUNED_MTU);
      assert.equal(await sysctl(pod.netnsName, TUNED_SYSCTL), '1');
      assert.equal(await sysctl(pod.netnsName, 'net.ipv4.conf.default.log_martians'), '0');
      assert.notEqual((await links(node.netns)).find((l) => l.ifname === hostVeth)?.mtu, TUNED_MTU);
    });

    test("CHECK behind vpcnet: vpcnet passes, Debian's portmap 1.1.1 fails (could not check ipv6 dnat)", async () => {
      // The day this fails, Debian's portmap checks IPv4-only pods correctly: test CHECK through it.
      const steps: ChainStep[] = [];
      const checked = runChain(call(pod, 'CHECK', capabilityArgs), full, final, (s) => steps.push(s));
      await assert.rejects(checked, (err: unknown) => {
        assert.ok(err instanceof PluginFailed, String(err));
        assert.equal(err.plugin, 'portmap');
        assert.match(err.message, /could not check ipv6 dnat/);
        return true;
      });
      assert.equal(steps[0]?.plugin, 'vpcnet');
      assert.equal(steps[0]?.output.exitCode, 0, steps[0]?.output.stdout);
    });

    test('DEL through the chain runs in reverse and removes everything: DNAT rules, qdiscs, ifb, veth, ledger entry', async () => {
      const ifbBefore = (await links(node.netns))
        .filter((l) => l.linkinfo?.info_kind === 'ifb')
        .map((l) => l.ifname);
      const steps: ChainStep[] = [];
      await runChain(call(pod, 'DEL', capabilityArgs), full, final, (s) => steps.push(s));
      assert.deepEqual(
        steps.map((s) => s.plugin),
        ['tuning', 'bandwidth', 'portmap', 'vpcnet'],
      );
      for (const s of steps)
        assert.deepEqual(s.config.prevResult, final, `${s.plugin} got another prevResult`);
      const nat = await natRules(node.netns);
      assert.doesNotMatch(nat, /-j DNAT|:CNI-DN-/, `DNAT rules left:\n${nat}`);
      assert.ok(!nat.includes(pod.containerId), `rules naming ${pod.containerId} left:\n${nat}`);
      const after = await links(node.netns);
      assert.ok(!after.some((l) => l.ifname === hostVeth), `host veth ${hostVeth} left`);
      assert.deepEqual(await qdiscs(node.netns, hostVeth), []);
      for (const dev of ifbBefore) assert.ok(!after.some((l) => l.ifname === dev), `ifb ${dev} left`);
      assert.ok(!after.some((l) => l.linkinfo?.info_kind === 'ifb'), 'an ifb device is left');
      const tuningFiles = await readdir(join(dataDir, 'tuning')).catch(() => []);
      assert.deepEqual(
        tuningFiles.filter((f) => f.includes(pod.containerId)),
        [],
      );
      const state = await agentState(node);
      assert.ok(!state.attachments.some((a) => a.key.containerId === pod.containerId), 'attachment left');
    });
  });

  test('CHECK through vpcnet → bandwidth → tuning passes, and fails at vpcnet once its pod address drifted', async () => {
    const pod = await newPod(name, 'check');
    const noPortmap = chain([...withBandwidth.plugins.filter((p) => p.type !== 'portmap'), tuning]);
    const capabilityArgs = { bandwidth: { ingressRate: INGRESS.rate, ingressBurst: INGRESS.burst } };
    const result = (await runChain(call(pod, 'ADD', capabilityArgs), noPortmap)) as CniResult;
    const ip = result.ips[0]!.address.split('/')[0]!;
    const steps: ChainStep[] = [];
    await runChain(call(pod, 'CHECK', capabilityArgs), noPortmap, result, (s) => steps.push(s));
    assert.deepEqual(
      steps.map((s) => [s.plugin, s.output.exitCode]),
      [
        ['vpcnet', 0],
        ['bandwidth', 0],
        ['tuning', 0],
      ],
    );
    await sh(['ip', '-n', pod.netnsName, 'addr', 'del', `${ip}/32`, 'dev', 'eth0']);
    await assert.rejects(runChain(call(pod, 'CHECK', capabilityArgs), noPortmap, result), (err: unknown) => {
      assert.ok(err instanceof PluginFailed, String(err));
      assert.equal(err.plugin, 'vpcnet');
      const cniError = JSON.parse(err.output.stdout) as { code: number; details?: string };
      assert.equal(cniError.code, 110);
      assert.match(cniError.details ?? '', new RegExp(ip.replace(/\./g, '\\.')));
      return true;
    });
    await runChain(call(pod, 'DEL', capabilityArgs), noPortmap, result);
  });

  test("Debian's portmap 1.1.1 fails CHECK behind the reference ptp plugin too: the fault is portmap's", async () => {
    // The same as behind vpcnet, with no vpcnet involved: ptp + host-local in namespaces of our own.
    const host = `${name}-ptphost`;
    await sh(['ip', 'netns', 'add', host]);
    const pod = await newPod(name, 'ptp');
    const ptpChain: NetConfList = {
      cniVersion: '1.0.0',
      name: `${name}-ptp`,
      plugins: [
        {
          type: 'ptp',
          ipMasq: false,
          ipam: { type: 'host-local', subnet: '10.250.0.0/24', dataDir: join(dataDir, 'host-local') },
        },
        installed.plugins[1]!,
      ],
    };
    const ptpCall: CniCall = {
      nodeNetns: host,
      cniBinDir: REFERENCE_PLUGINS,
      command: 'ADD',
      containerId: pod.containerId,
      netns: pod.netnsPath,
      ifName: 'eth0',
      capabilityArgs: {
        portMappings: [{ hostPort: HOST_PORT, containerPort: CONTAINER_PORT, protocol: 'tcp' }],
      },
    };
    const result = await runChain(ptpCall, ptpChain);
    const steps: ChainStep[] = [];
    await assert.rejects(
      runChain({ ...ptpCall, command: 'CHECK' }, ptpChain, result, (s) => steps.push(s)),
      (err: unknown) => {
        assert.ok(err instanceof PluginFailed, String(err));
        assert.equal(err.plugin, 'portmap');
        assert.match(err.message, /could not check ipv6 dnat/);
        return true;
      },
    );
    assert.equal(steps[0]?.output.exitCode, 0, `ptp's own CHECK failed: ${steps[0]?.output.stdout}`);
    await runChain({ ...ptpCall, command: 'DEL' }, ptpChain, result);
    assert.doesNotMatch(await natRules(host), /-j DNAT|:CNI-DN-/);
  });
});
