import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  AWS_NODE_CHECKPOINT_MAX_BYTES,
  AwsNodeCheckpointError,
  parseAwsNodeCheckpoint,
  readAwsNodeCheckpoint,
} from './aws-node-checkpoint.ts';
import { awsNodeHostVethName } from './aws-node-names.ts';
import { listensOnLoopback } from './ipamd-listening.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

// As ipamd writes it (datastore.CheckpointData): Go's field names, nanosecond timestamps, metadata
// without interfacesCount for a single-interface pod.
const IPAMD = JSON.stringify({
  version: 'vpc-cni-ipam/1',
  allocations: [
    {
      networkName: 'aws-cni',
      containerID: 'b1946ac92492d2347c6235b4d2611184',
      ifName: 'eth0',
      ipv4: '10.0.12.7',
      allocationTimestamp: 'NS',
      metadata: { k8sPodNamespace: 'kube-system', k8sPodName: 'coredns-5d78c9869d-abcde' },
    },
    {
      networkName: 'aws-cni',
      containerID: 'c2',
      ifName: 'eth0',
      ipv6: '2001:db8::7',
      allocationTimestamp: 1,
      metadata: { k8sPodNamespace: 'default', k8sPodName: 'v6', interfacesCount: 2 },
    },
  ],
  // Nanoseconds past 2^53, as ipamd writes them: JSON.parse reads them to the nearest double.
}).replace('"NS"', '1764601200123456789');

test("ipamd's checkpoint reads as its allocations, timestamps in ms", () => {
  const c = parseAwsNodeCheckpoint('/x', IPAMD);
  assert.deepEqual(c.skipped, []);
  assert.deepEqual(c.allocations[0], {
    networkName: 'aws-cni',
    containerId: 'b1946ac92492d2347c6235b4d2611184',
    ifName: 'eth0',
    ipv4: '10.0.12.7',
    allocatedAt: 1764601200123,
    namespace: 'kube-system',
    name: 'coredns-5d78c9869d-abcde',
    interfacesCount: 1,
  });
  assert.equal(c.allocations[1]!.ipv6, '2001:db8::7');
  assert.equal(c.allocations[1]!.interfacesCount, 2);
});

test('a node without pods: allocations null or empty', () => {
  for (const allocations of [null, []])
    assert.deepEqual(
      parseAwsNodeCheckpoint('/x', JSON.stringify({ version: 'vpc-cni-ipam/1', allocations })),
      {
        allocations: [],
        skipped: [],
      },
    );
});

test('a file that is not ipamd checkpoint is refused whole, naming the path and the problem', () => {
  for (const [text, problem] of [
    ['{', /not JSON/],
    ['[]', /not a JSON object/],
    [
      '{"version":"vpc-cni-ipam/2","allocations":[]}',
      /version "vpc-cni-ipam\/2", expected "vpc-cni-ipam\/1"/,
    ],
    ['{"version":"vpc-cni-ipam/1","allocations":{}}', /allocations is not an array/],
  ] as const)
    assert.throws(
      () => parseAwsNodeCheckpoint('/var/run/aws-node/ipam.json', text),
      (e: unknown) =>
        e instanceof AwsNodeCheckpointError &&
        e.message.startsWith('aws-node checkpoint /var/run/aws-node/ipam.json: ') &&
        problem.test(e.message),
    );
});

test('an entry that does not read is skipped with why; the others stand', () => {
  const good = {
    networkName: 'n',
    containerID: 'c',
    ifName: 'eth0',
    ipv4: '10.0.0.5',
    allocationTimestamp: 0,
  };
  const bad: [unknown, RegExp][] = [
    [null, /not an object/],
    [{ ...good, ipv4: '10.0.0.300' }, /not an IPv4 address/],
    [{ ...good, ipv4: undefined }, /neither ipv4 nor ipv6/],
    [{ ...good, containerID: '' }, /containerID is missing/],
    [{ ...good, ifName: 7 }, /ifName is not a string/],
    [{ ...good, allocationTimestamp: 'now' }, /allocationTimestamp/],
    [{ ...good, metadata: { interfacesCount: -1 } }, /interfacesCount/],
  ];
  const c = parseAwsNodeCheckpoint(
    '/x',
    JSON.stringify({ version: 'vpc-cni-ipam/1', allocations: [good, ...bad.map(([e]) => e)] }),
  );
  assert.equal(c.allocations.length, 1);
  assert.deepEqual(
    c.skipped.map((s) => s.index),
    bad.map((_, i) => i + 1),
  );
  for (const [i, [, reason]] of bad.entries()) assert.match(c.skipped[i]!.reason, reason);
});

test('reading: none is undefined, a file past the bound is refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-ckpt-'));
  dirs.push(dir);
  assert.equal(await readAwsNodeCheckpoint(join(dir, 'absent.json')), undefined);
  const path = join(dir, 'ipam.json');
  await writeFile(path, IPAMD);
  assert.equal((await readAwsNodeCheckpoint(path))?.allocations.length, 2);
  await writeFile(path, ' '.repeat(AWS_NODE_CHECKPOINT_MAX_BYTES + 1));
  await assert.rejects(readAwsNodeCheckpoint(path), /more than the 4194304 bytes/);
});

test("aws-node's host veth names: prefix and 11 hex digits of SHA-1 of namespace.name", () => {
  assert.equal(awsNodeHostVethName('eni', 'default', 'web-1'), 'eni0761ccbeace');
  assert.equal(awsNodeHostVethName('cali', 'kube-system', 'coredns-5d78c9869d-abcde'), 'cali4d5f75c480c');
});

test('ipamd is seen listening on 127.0.0.1:50051 in /proc/net/tcp, and only there', () => {
  const header =
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
  const line = (local: string, st: string) =>
    `   0: ${local} 00000000:0000 ${st} 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n`;
  assert.equal(listensOnLoopback(header + line('0100007F:C383', '0A'), 50051), true);
  assert.equal(
    listensOnLoopback(header + line('0100007F:C383', '01'), 50051),
    false,
    'an established connection',
  );
  assert.equal(listensOnLoopback(header + line('0100007F:C384', '0A'), 50051), false, 'another port');
  assert.equal(listensOnLoopback(header + line('0500000A:C383', '0A'), 50051), false, 'another address');
  assert.equal(listensOnLoopback(header, 50051), false);
});
