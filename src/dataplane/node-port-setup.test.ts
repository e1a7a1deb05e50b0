import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from './dataplane.ts';
import { setupNodePort } from './node-port-setup.ts';
import { FakeKernel } from './testing/fake-kernel.ts';

const MAC = '02:00:00:00:00:01';

function world(rp: Record<string, string>, kernel = new FakeKernel()) {
  kernel.namespaces.get('node')?.links.set('ens5', {
    name: 'ens5',
    mac: MAC,
    up: true,
    mtu: 9001,
    kind: 'device',
    addresses: new Set(['10.0.0.10/24']),
  });
  const warnings: string[] = [];
  const log = {
    info: () => {},
    warn: (m: string) => warnings.push(m),
    error: (m: string) => warnings.push(m),
  };
  const readSysctl = async (p: string) => {
    const v = rp[p];
    if (v === undefined) throw new Error(`ENOENT ${p}`);
    return `${v}\n`;
  };
  return { kernel, warnings, deps: { dataplane: new Dataplane(kernel), log, readSysctl } };
}

const cfg = { enabled: true, mark: 0x80, primaryMac: MAC.toUpperCase(), vethPrefix: 'vpc' };

test('the rules name the link that carries the primary ENI MAC, and the veth and trunk-device prefixes', async () => {
  const w = world({
    '/proc/sys/net/ipv4/conf/all/rp_filter': '0',
    '/proc/sys/net/ipv4/conf/ens5/rp_filter': '2',
  });
  assert.equal(await setupNodePort(cfg, w.deps), undefined);
  assert.deepEqual(w.kernel.nodePortConfig, {
    enabled: true,
    mark: 0x80,
    primaryLink: 'ens5',
    podLinkPrefixes: ['vpc', 'vlb'],
  });
  assert.deepEqual(w.warnings, []);
});

test('a strict rp_filter on the primary ENI is warned about, and no sysctl is written', async () => {
  const w = world({
    '/proc/sys/net/ipv4/conf/all/rp_filter': '0',
    '/proc/sys/net/ipv4/conf/ens5/rp_filter': '1',
  });
  const problem = await setupNodePort(cfg, w.deps);
  assert.match(problem ?? '', /rp_filter is strict \(1\) on ens5/);
  assert.deepEqual(w.warnings, [problem]);
});

test('without a link of the primary MAC nothing is set up and the log says so', async () => {
  const w = world({});
  const problem = await setupNodePort({ ...cfg, primaryMac: '02:00:00:00:00:99' }, w.deps);
  assert.match(problem ?? '', /no link .* has the primary ENI's MAC 02:00:00:00:00:99/);
  assert.equal(w.kernel.nodePortConfig, undefined);
});

test('disabled: the chain and rule are removed and rp_filter is not judged', async () => {
  const w = world({ '/proc/sys/net/ipv4/conf/all/rp_filter': '1' });
  assert.equal(await setupNodePort({ ...cfg, enabled: false }, w.deps), undefined);
  assert.equal(w.kernel.nodePortConfig?.enabled, false);
  assert.deepEqual(w.warnings, []);
});

test('a set-up the kernel refuses (no nf_tables) is logged with the fix and does not stop the agent', async () => {
  class NoNftables extends FakeKernel {
    override async setupNodePort(): Promise<void> {
      throw new Error('nft: Unable to initialize Netlink socket: Protocol not supported');
    }
  }
  const w = world({}, new NoNftables());
  const problem = await setupNodePort(cfg, w.deps);
  assert.match(
    problem ?? '',
    /could not be set up \(nft: .*Protocol not supported\).*AWS_VPC_CNI_NODE_PORT_SUPPORT=false/,
  );
  assert.deepEqual(w.warnings, [problem]);
});
