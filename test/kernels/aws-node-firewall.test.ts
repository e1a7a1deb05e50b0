// aws-node's firewall leftovers removed from a real kernel (issue 24, item 5): a node namespace
// holding aws-node's SNAT and connmark chains through both iptables backends (nft and legacy, as
// different node images use), its `ip aws-cni` nftables table, and other parties' rules beside them.
// The removal takes exactly aws-node's, and does not create a legacy table where none was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { AWS_NODE_IPTABLES_REMOVALS, awsNodeIptables } from '../aws-node-state.ts';
import { execIn, mustExecIn, netnsPath, withNetnsCleanup } from '../netns-fixture.ts';

const AWS_NAT = awsNodeIptables('10.0.0.4');

async function saved(ns: string, tool: string): Promise<string> {
  const nat = await mustExecIn(ns, [`${tool}-save`, '-t', 'nat']);
  const mangle = await mustExecIn(ns, [`${tool}-save`, '-t', 'mangle']);
  return nat.stdout + mangle.stdout;
}

test("aws-node's chains and rules go from both iptables backends and its nftables table; others' stay", async () => {
  await withNetnsCleanup(async (create) => {
    const ns = await create('vpcaw-');
    for (const tool of ['iptables-nft', 'iptables-legacy'])
      await mustExecIn(ns, [`${tool}-restore`, '--noflush'], AWS_NAT);
    await mustExecIn(ns, ['nft', 'add', 'table', 'ip', 'aws-cni']);
    await mustExecIn(ns, ['nft', 'add', 'chain', 'ip', 'aws-cni', 'snat-mark']);

    const r = await new IpCliKernel({ hostNetns: netnsPath(ns) }).removeAwsNodeFirewall();
    assert.deepEqual(r.problems, []);
    for (const tool of ['iptables-nft', 'iptables-legacy']) {
      assert.equal(
        r.removed.filter((l) => l.startsWith(`${tool} `)).length,
        AWS_NODE_IPTABLES_REMOVALS,
        `${tool}: ${r.removed.join('\n')}`,
      );
      const after = await saved(ns, tool);
      assert.doesNotMatch(after, /AWS/, `${tool} keeps aws-node's`);
      assert.match(after, /kubernetes postrouting rules/, `${tool} lost someone else's rule`);
      assert.match(after, /someone else/, `${tool} lost someone else's rule`);
    }
    assert.ok(r.removed.includes('nft table ip aws-cni'));
    assert.notEqual((await execIn(ns, ['nft', 'list', 'table', 'ip', 'aws-cni'])).code, 0);

    // A second run finds nothing to do.
    assert.deepEqual(await new IpCliKernel({ hostNetns: netnsPath(ns) }).removeAwsNodeFirewall(), {
      removed: [],
      problems: [],
    });
  });
});

test('a namespace without legacy tables gets none from the removal', async () => {
  await withNetnsCleanup(async (create) => {
    const ns = await create('vpcaw-');
    await mustExecIn(ns, ['iptables-nft-restore', '--noflush'], AWS_NAT);
    const r = await new IpCliKernel({ hostNetns: netnsPath(ns) }).removeAwsNodeFirewall();
    assert.deepEqual(r.problems, []);
    assert.equal(r.removed.length, AWS_NODE_IPTABLES_REMOVALS);
    const legacy = await mustExecIn(ns, ['cat', '/proc/net/ip_tables_names']);
    assert.equal(legacy.stdout.trim(), '', 'a legacy table was created');
  });
});
