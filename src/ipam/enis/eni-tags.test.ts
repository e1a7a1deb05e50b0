import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { managerFactory, settle, T0 } from '../testing/manager-setup.ts';
import { VPCNET_OWN_TAG_KEYS } from './eni-ownership.ts';
import { createdAtTagValue, parseAdditionalEniTags, parseCreatedAtTag } from './eni-tags.ts';

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

describe('ENI tags', () => {
  test('every ENI vpcnet creates carries the instance, created-by, createdAt and cluster tags plus ADDITIONAL_ENI_TAGS, from its creation on', async () => {
    const { cloud, manager } = await setup({
      primarySecondaryIps: 3,
      deps: { eniTags: { clusterName: 'prod', additionalTags: { team: 'net', cost: '42' } } },
    });
    manager.allocate('vpcnet/c1/eth0');
    await settle(manager);
    const created = cloud.attached()[1];
    assert.deepEqual(created?.tags, {
      team: 'net',
      cost: '42',
      'node.k8s.amazonaws.com/instance_id': 'i-0fake',
      'vpcnet.io/created-by': 'vpcnet',
      'node.k8s.amazonaws.com/createdAt': createdAtTagValue(T0),
      'cluster.k8s.amazonaws.com/name': 'prod',
    });
    const create = cloud.calls.find((c) => c.startsWith('createEni')) ?? '';
    assert.match(
      create,
      /cluster\.k8s\.amazonaws\.com\/name=prod/,
      'tagged in CreateNetworkInterface itself',
    );
    assert.match(create, /node\.k8s\.amazonaws\.com\/createdAt=/);
  });

  test('createdAt is RFC 3339 in UTC to the second, as the upstream writes it, and reads back', () => {
    const ms = Date.parse('2026-11-30T10:21:28.456Z');
    assert.equal(createdAtTagValue(ms), '2026-11-30T10:21:28Z');
    assert.equal(parseCreatedAtTag('2026-11-30T10:21:28Z'), Date.parse('2026-11-30T10:21:28Z'));
    assert.equal(parseCreatedAtTag('2026-11-30T11:21:28+01:00'), Date.parse('2026-11-30T10:21:28Z'));
    assert.equal(parseCreatedAtTag('yesterday'), undefined);
    assert.equal(parseCreatedAtTag('2026-11-30'), undefined, 'a date alone is not RFC 3339');
    assert.equal(parseCreatedAtTag(undefined), undefined);
  });

  test('ADDITIONAL_ENI_TAGS: a JSON object of string values; reserved, AWS, own and over-long keys and too many tags are refused', () => {
    assert.deepEqual(parseAdditionalEniTags('{"team":"net","empty":""}', VPCNET_OWN_TAG_KEYS), {
      team: 'net',
      empty: '',
    });
    assert.deepEqual(parseAdditionalEniTags('{}', VPCNET_OWN_TAG_KEYS), {});
    const refused: [string, RegExp][] = [
      ['not json', /not valid JSON/],
      ['"text"', /expected a JSON object/],
      ['null', /expected a JSON object/],
      ['{"a":{"b":"c"}}', /value of tag "a" must be a string/],
      ['{"example.k8s.amazonaws.com/x":"y"}', /reserved "k8s\.amazonaws\.com"/],
      ['{"AWS:x":"y"}', /starts with "aws:"/],
      ['{"cluster.k8s.amazonaws.com/name":"y"}', /reserved/],
      ['{"vpcnet.io/created-by":"y"}', /one vpcnet sets itself/],
      ['{"":"y"}', /1 to 128 characters/],
      [`{"k":"${'v'.repeat(257)}"}`, /at most 256 characters/],
    ];
    for (const [text, fault] of refused)
      assert.throws(() => parseAdditionalEniTags(text, VPCNET_OWN_TAG_KEYS), fault, text);
    const max = Object.fromEntries(
      Array.from({ length: 50 - VPCNET_OWN_TAG_KEYS.length }, (_, i) => [`k${i}`, 'v']),
    );
    assert.equal(Object.keys(parseAdditionalEniTags(JSON.stringify(max), VPCNET_OWN_TAG_KEYS)).length, 46);
    assert.throws(
      () => parseAdditionalEniTags(JSON.stringify({ ...max, one: 'more' }), VPCNET_OWN_TAG_KEYS),
      /at most 46 tags \(EC2 allows 50 per ENI/,
    );
  });
});
