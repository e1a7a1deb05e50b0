import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAnswer, planRequest, readRequest, runRequest, SCOPE_MAX, targetText } from './wire.ts';

test('every operation is one line of space-separated fields, "-" for what is absent', () => {
  const text = runRequest(
    7,
    { side: 'node' },
    [
      { op: 'vethAdd', name: 'eth0', mtu: 9001, peer: 'vpc1', peerMac: '02:00:00:00:00:01' },
      {
        op: 'vethAdd',
        name: 'eth0',
        mac: '02:00:00:00:00:02',
        mtu: 1500,
        peer: 'vpc1',
        peerMac: '02:00:00:00:00:01',
      },
      {
        op: 'trunkDeviceAdd',
        name: 'vlb1',
        parent: 'eth1',
        mac: '02:00:00:00:00:03',
        mtu: 9001,
        vlanId: 12,
        driver: 'vlan',
      },
      { op: 'linkUp', dev: 'vpc1' },
      { op: 'linkUp', dev: 'vpc1', mtu: 9001 },
      { op: 'linkDel', dev: 'vpc1' },
      { op: 'addrAdd', dev: 'eth0', cidr: '10.0.0.5/32', replace: true },
      { op: 'addrDel', dev: 'eth0', cidr: '10.0.0.5/32' },
      { op: 'addrAdd', dev: 'eth0', cidr: '2001:db8::5/128', nodad: true },
      { op: 'routeAdd', dst: 'default', dev: 'eth0', via: '169.254.1.1', table: 254 },
      {
        op: 'routeAdd',
        dst: '10.0.0.5/32',
        dev: 'vpc1',
        table: 2,
        scopeLink: true,
        metric: 10,
        replace: true,
      },
      { op: 'routeDel', dst: '10.0.0.5/32', dev: 'vpc1', table: 2 },
      { op: 'neighAdd', dev: 'eth0', ip: '169.254.1.1', lladdr: '02:00:00:00:00:01' },
      { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } },
      { op: 'ruleDel', rule: { priority: 1536, from: '10.0.0.5/32', iif: 'vlb1', table: 2 } },
    ],
    'all',
  );
  assert.equal(
    text,
    [
      'run 7 all 15 node',
      'vethAdd eth0 - 9001 vpc1 02:00:00:00:00:01',
      'vethAdd eth0 02:00:00:00:00:02 1500 vpc1 02:00:00:00:00:01',
      'trunkDeviceAdd vlb1 eth1 02:00:00:00:00:03 9001 12 vlan',
      'linkUp vpc1 -',
      'linkUp vpc1 9001',
      'linkDel vpc1',
      'addrAdd eth0 10.0.0.5/32 1 0',
      'addrDel eth0 10.0.0.5/32',
      'addrAdd eth0 2001:db8::5/128 0 1',
      'routeAdd default eth0 169.254.1.1 254 0 - 0',
      'routeAdd 10.0.0.5/32 vpc1 - 2 1 10 1',
      'routeDel 10.0.0.5/32 vpc1 2',
      'neighAdd eth0 169.254.1.1 02:00:00:00:00:01 0',
      'ruleAdd 512 - 10.0.0.5/32 - 254',
      'ruleDel 1536 10.0.0.5/32 - vlb1 2',
      '',
    ].join('\n'),
  );
});

test('a pod namespace travels as hex, so a path with spaces stays one field; an empty path is refused', () => {
  assert.equal(
    targetText({ side: 'pod', path: '/run/netns/a b' }),
    `pod:${Buffer.from('/run/netns/a b').toString('hex')}`,
  );
  assert.equal(readRequest(3, { side: 'pod', path: '/x' }), 'read 3 pod:2f78\n');
  assert.throws(() => targetText({ side: 'pod', path: '' }), /invalid network namespace path ""/);
  assert.throws(() => targetText({ side: 'pod', path: '/a\0b' }), /invalid network namespace path/);
  assert.throws(
    () => targetText({ side: 'pod', path: `/${'x'.repeat(4095)}` }),
    /invalid network namespace path/,
  );
  assert.ok(targetText({ side: 'pod', path: `/${'x'.repeat(4094)}` }).length <= 8196);
});

test('answers parse into refusals, run results and reads; anything else is an error', () => {
  assert.deepEqual(parseAnswer('{"id":1,"entered":false,"reason":"/x is not a network namespace"}'), {
    id: 1,
    entered: false,
    reason: '/x is not a network namespace',
  });
  assert.deepEqual(
    parseAnswer(
      '{"id":2,"entered":true,"failures":[{"index":1,"message":"RTNETLINK answers: File exists"}]}',
    ),
    { id: 2, entered: true, failures: [{ index: 1, message: 'RTNETLINK answers: File exists' }] },
  );
  assert.deepEqual(parseAnswer('{"id":3,"entered":true,"links":[],"routes":[],"rules":[]}'), {
    id: 3,
    entered: true,
    dump: { links: [], routes: [], rules: [], neighbours: undefined },
  });
  assert.deepEqual(parseAnswer('{"id":4,"entered":true,"error":"rule show: RTNETLINK answers: x"}'), {
    id: 4,
    entered: true,
    error: 'rule show: RTNETLINK answers: x',
  });
  assert.throws(() => parseAnswer('{"entered":true}'), /answer without id/);
  assert.throws(() => parseAnswer('{"id":5,"entered":true,"failures":[{"index":"0"}]}'), /malformed failure/);
  assert.throws(() => parseAnswer('{"id":6,"entered":false}'), /answer 6 without reason/);
});

test('a plan is one request of parts, each with its namespace and operations; its answer has the parts that ran', () => {
  const text = planRequest(9, [
    { ns: { side: 'pod', path: '/p' }, ops: [{ op: 'linkUp', dev: 'eth0' }] },
    {
      ns: { side: 'node' },
      ops: [
        { op: 'linkUp', dev: 'vpc1' },
        { op: 'linkDel', dev: 'vpc2' },
      ],
    },
  ]);
  assert.equal(text, 'plan 9 2\npart 1 pod:2f70\nlinkUp eth0 -\npart 2 node\nlinkUp vpc1 -\nlinkDel vpc2\n');
  assert.deepEqual(
    parseAnswer(
      '{"id":9,"parts":[{"entered":true,"failures":[]},{"entered":true,"failures":[{"index":1,"message":"m"}]}]}',
    ),
    {
      id: 9,
      parts: [
        { entered: true, failures: [] },
        { entered: true, failures: [{ index: 1, message: 'm' }] },
      ],
    },
  );
  assert.deepEqual(parseAnswer('{"id":10,"parts":[{"entered":false,"reason":"gone"}]}'), {
    id: 10,
    parts: [{ entered: false, reason: 'gone' }],
  });
  assert.throws(() => parseAnswer('{"id":11,"parts":[{"failures":[]}]}'), /answer 11: malformed run/);
});

test("a pod's read carries its scope: links and route devices as hex, tables and rule priorities as numbers", () => {
  const scope = {
    links: ['eth0', 'net1'],
    routes: [
      { table: 254, dev: 'eth0' },
      { table: 4242, dev: 'net1' },
    ],
    rulePriorities: [1536],
  };
  assert.equal(
    readRequest(7, { side: 'pod', path: '/p' }, scope),
    'read 7 pod:2f70 scope link:65746830 link:6e657431 route:254:65746830 route:4242:6e657431 rule:1536\n',
  );
  assert.equal(
    readRequest(8, { side: 'pod', path: '/p' }, { links: [], routes: [], rulePriorities: [] }),
    'read 8 pod:2f70 scope\n',
  );
  assert.equal(readRequest(9, { side: 'pod', path: '/p' }), 'read 9 pod:2f70\n');
});

test('a scope the helper would refuse (and end on) is refused before it is sent', () => {
  const pod = { side: 'pod', path: '/p' } as const;
  const none = { links: [], routes: [], rulePriorities: [] };
  assert.throws(() => readRequest(1, { side: 'node' }, none), /scope is a pod's/);
  assert.throws(() => readRequest(1, pod, { ...none, links: ['iface-of-16-char'] }), /invalid link name/);
  assert.throws(() => readRequest(1, pod, { ...none, links: [''] }), /invalid link name/);
  assert.throws(
    () => readRequest(1, pod, { ...none, routes: [{ table: 0, dev: 'eth0' }] }),
    /invalid number 0/,
  );
  assert.throws(() => readRequest(1, pod, { ...none, rulePriorities: [2 ** 32] }), /invalid number/);
  assert.throws(() => readRequest(1, pod, { ...none, links: Array(17).fill('eth0') }), /more than 16/);
  assert.equal(readRequest(1, pod, { ...none, links: ['iface-of-15-chr'] }).length > 0, true);
});

test("a pod's namespace that holds too much to read is an answer of its own, not an error", () => {
  assert.deepEqual(
    parseAnswer('{"id":5,"entered":true,"tooLarge":"holds more than 10000 routes (table main, dev eth0)"}'),
    { id: 5, entered: true, tooLarge: 'holds more than 10000 routes (table main, dev eth0)' },
  );
});

test("the scope's limit of items is the helper's", () => {
  const header = readFileSync(join(import.meta.dirname, 'native', 'dump.h'), 'utf8');
  assert.equal(Number(/#define SCOPE_MAX (\d+)/.exec(header)?.[1]), SCOPE_MAX);
});
