// `npm start` runs `vpcnetctl demo`; --no-wait skips the serving phase so the whole flow
// (lab up, three pods through the plugin, the table with live checks, teardown) runs here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ctl, sh, uniqueLabName } from '../lab-fixture.ts';

test('the demo shows three pods with VPC addresses that reach the VPC host and each other, then removes everything', async () => {
  const name = uniqueLabName('vpcdm');
  try {
    const out = await ctl(['demo', '--name', name, '--no-wait']);
    const rows = out.split('\n').filter((l) => l.startsWith('default/demo-'));
    assert.equal(rows.length, 3, out);
    const ips = rows.map((r) => /\b(10\.0\.\d+\.\d+)\b/.exec(r)?.[1]);
    assert.equal(new Set(ips).size, 3, `addresses not distinct: ${ips.join(', ')}`);
    for (const r of rows) {
      assert.ok(!r.includes('NO'), `a reachability check failed: ${r}`);
      assert.match(r, /yes/);
    }
    assert.match(out, /done: no namespace, process or file of the lab is left/);
    const left = (await sh(['ip', 'netns', 'list'])).split('\n').filter((l) => l.startsWith(`${name}-`));
    assert.deepEqual(left, []);
  } finally {
    await ctl(['lab', 'down', '--name', name]);
  }
});
