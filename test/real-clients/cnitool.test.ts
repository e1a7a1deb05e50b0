// cnitool (libcni 1.1.2, the CNI project's own client) drives the installed plugin from inside a
// lab node's namespace. libcni differs from our own test driver in ways that matter: it
// re-marshals each plugin's config with its keys in alphabetical order, caches the ADD result
// under /var/lib/cni/results and sends it back as prevResult on CHECK and DEL, never calls
// VERSION, and derives the container ID from the netns path.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ProcessResult } from '../../src/infra/process.ts';
import {
  agentState,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  reaches,
  registerPod,
  sh,
  uniqueLabName,
  waitCooling,
} from '../lab-fixture.ts';
import { clientsDir, gate, runClient } from './clients.ts';

const cnitoolPath = join(clientsDir, 'cnitool');
const cnitoolGate = await gate('cnitool', [{ file: cnitoolPath }]);

/** libcni's result cache; host-global, so the suite touches only its own container IDs. */
const resultsDir = '/var/lib/cni/results';

interface CnitoolPod {
  netnsName: string;
  netnsPath: string;
  /** What cnitool derives from the netns path: "cnitool-" + 20 hex digits of its SHA-512. */
  containerId: string;
  namespace: string;
  name: string;
  uid: string;
}

interface CachedResult {
  containerId: string;
  cniArgs?: [string, string][];
  result: { ips: { address: string }[]; interfaces: { name: string; sandbox?: string }[] };
}

describe('cnitool (libcni 1.1.2) in a lab node namespace', { skip: cnitoolGate.skip }, () => {
  const labName = uniqueLabName('vpcrc');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const created: CnitoolPod[] = [];

  before(async () => {
    cnitoolGate.assertPresent();
    await labDown(labName);
    // The reconcile loop would repair the address the CHECK test removes by hand.
    lab = await labUp(labName, ['--agent-env', 'VPCNET_RECONCILE_SECONDS=0']);
    node = lab.nodes[0]!;
  });
  after(async () => {
    for (const pod of created) await rm(cachePath(pod), { force: true });
    await labDown(labName);
  });

  async function newCnitoolPod(short: string): Promise<CnitoolPod> {
    const netnsName = `${labName}-${short}`;
    const netnsPath = `/var/run/netns/${netnsName}`;
    await sh(['ip', 'netns', 'add', netnsName]);
    const digest = createHash('sha512').update(netnsPath).digest('hex').slice(0, 20);
    const pod = {
      netnsName,
      netnsPath,
      containerId: `cnitool-${digest}`,
      namespace: 'default',
      name: `cnitool-${short}`,
      uid: `uid-${labName}-${short}`,
    };
    created.push(pod);
    await registerPod(labName, node.name, pod.namespace, pod.name, pod.uid);
    return pod;
  }

  function cachePath(pod: CnitoolPod): string {
    return join(resultsDir, `vpcnet-${pod.containerId}-eth0`);
  }

  async function readCache(pod: CnitoolPod): Promise<CachedResult> {
    return JSON.parse(await readFile(cachePath(pod), 'utf8')) as CachedResult;
  }

  /** `cnitool CMD vpcnet NETNS`, itself run inside the node's namespace. */
  function cnitool(cmd: 'add' | 'check' | 'del', pod: CnitoolPod): Promise<ProcessResult> {
    return runClient(
      [
        'ip',
        'netns',
        'exec',
        node.netns,
        'env',
        `CNI_PATH=${node.cniBinDir}`,
        `NETCONFPATH=${node.cniConfDir}`,
        `CNI_ARGS=K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
        cnitoolPath,
        cmd,
        'vpcnet',
        pod.netnsPath,
      ],
      { timeoutMs: 30000 },
    );
  }

  function podIp(cache: CachedResult): string {
    return cache.result.ips[0]!.address.split('/')[0]!;
  }

  test("add gives the pod a VPC address that the ledger records under cnitool's container ID", async () => {
    const pod = await newCnitoolPod('add');
    const add = await cnitool('add', pod);
    assert.equal(add.code, 0, `cnitool add failed: ${add.stderr}${add.stdout}`);
    const printed = JSON.parse(add.stdout) as CachedResult['result'];
    const cache = await readCache(pod);
    assert.equal(cache.containerId, pod.containerId);
    assert.deepEqual(cache.result.ips, printed.ips, 'cached result differs from the printed one');
    const ip = podIp(cache);
    assert.match(ip, /^10\.0\./, `${ip} is not in the VPC`);
    const sandboxIf = cache.result.interfaces.find((i) => i.sandbox === pod.netnsPath);
    assert.equal(sandboxIf?.name, 'eth0');
    const state = await agentState(node);
    const att = state.attachments.find((a) => a.key.containerId === pod.containerId);
    assert.ok(att, `no attachment for ${pod.containerId} in the ledger`);
    assert.equal(att.ip, ip);
    // CNI_ARGS reached the agent: the attachment carries the pod's Kubernetes identity.
    const withPod = att as typeof att & { pod?: { namespace: string; name: string; uid?: string } };
    assert.deepEqual(
      { namespace: withPod.pod?.namespace, name: withPod.pod?.name },
      { namespace: pod.namespace, name: pod.name },
    );
    assert.ok(await reaches(pod.netnsName, lab.vpcHosts[0]!.ip), `pod ${ip} cannot reach the VPC host`);
    assert.equal((await cnitool('del', pod)).code, 0);
  });

  test("check accepts the re-marshalled config with cnitool's cached prevResult, and fails when the pod's address is gone", async () => {
    const pod = await newCnitoolPod('chk');
    const add = await cnitool('add', pod);
    assert.equal(add.code, 0, add.stderr);
    const ip = podIp(await readCache(pod));
    const ok = await cnitool('check', pod);
    assert.equal(ok.code, 0, `cnitool check failed on a healthy pod: ${ok.stderr}`);
    await sh(['ip', '-n', pod.netnsName, 'addr', 'del', `${ip}/32`, 'dev', 'eth0']);
    const bad = await cnitool('check', pod);
    assert.notEqual(bad.code, 0, 'cnitool check passed although the pod lost its address');
    assert.match(bad.stderr, new RegExp(ip.replace(/\./g, '\\.')), `check error does not name ${ip}`);
    assert.equal((await cnitool('del', pod)).code, 0);
  });

  test("del removes the attachment, its host veth and cnitool's cached result; a repeated del succeeds", async () => {
    const pod = await newCnitoolPod('del');
    assert.equal((await cnitool('add', pod)).code, 0);
    const ip = podIp(await readCache(pod));
    const before = await agentState(node);
    const veth = before.attachments.find((a) => a.key.containerId === pod.containerId)?.hostVeth;
    assert.ok(veth && (await hostLinks(node)).includes(veth), 'host veth missing after add');

    const del = await cnitool('del', pod);
    assert.equal(del.code, 0, `cnitool del failed: ${del.stderr}`);
    const afterDel = await agentState(node);
    assert.ok(
      !afterDel.attachments.some((a) => a.key.containerId === pod.containerId),
      'attachment left in the ledger',
    );
    await waitCooling(node, ip);
    assert.ok(!(await hostLinks(node)).includes(veth), `host veth ${veth} left behind`);
    await assert.rejects(readFile(cachePath(pod)), 'libcni kept its cached result after del');

    // No cached result now, so no prevResult: DEL of something already gone succeeds.
    const again = await cnitool('del', pod);
    assert.equal(again.code, 0, `repeated cnitool del failed: ${again.stderr}`);
  });
});
