import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flattenQuery, queryFormBody, uriEncode } from './query-form.ts';

test('lists count from 1 and lists of structures flatten to Name.N.Member (EC2 query style)', () => {
  assert.deepEqual(
    flattenQuery({
      Filter: [
        { Name: 'attachment.instance-id', Value: ['i-0a'] },
        { Name: 'tag:team', Value: ['net', 'hpc'] },
      ],
      PrivateIpAddress: ['10.0.0.5', '10.0.0.6'],
      TagSpecification: [{ ResourceType: 'network-interface', Tag: [{ Key: 'k', Value: 'v' }] }],
      Attachment: { AttachmentId: 'eni-attach-1', DeleteOnTermination: true },
      DeviceIndex: 2,
      NextToken: undefined,
    }),
    [
      ['Filter.1.Name', 'attachment.instance-id'],
      ['Filter.1.Value.1', 'i-0a'],
      ['Filter.2.Name', 'tag:team'],
      ['Filter.2.Value.1', 'net'],
      ['Filter.2.Value.2', 'hpc'],
      ['PrivateIpAddress.1', '10.0.0.5'],
      ['PrivateIpAddress.2', '10.0.0.6'],
      ['TagSpecification.1.ResourceType', 'network-interface'],
      ['TagSpecification.1.Tag.1.Key', 'k'],
      ['TagSpecification.1.Tag.1.Value', 'v'],
      ['Attachment.AttachmentId', 'eni-attach-1'],
      ['Attachment.DeleteOnTermination', 'true'],
      ['DeviceIndex', '2'],
    ],
  );
});

test('the body starts with Action and Version and percent-encodes everything but unreserved characters', () => {
  assert.equal(
    queryFormBody('CreateNetworkInterface', '2016-11-15', {
      Description: "vpcnet ENI (node's) *",
      Key: 'a/b:c=d&e',
    }),
    'Action=CreateNetworkInterface&Version=2016-11-15' +
      '&Description=vpcnet%20ENI%20%28node%27s%29%20%2A&Key=a%2Fb%3Ac%3Dd%26e',
  );
  assert.equal(uriEncode('AZaz09-_.~ é'), 'AZaz09-_.~%20%C3%A9');
});

test('the emulator and EC2 read a flattened body back into the same values', () => {
  const body = queryFormBody('DescribeNetworkInterfaces', '2016-11-15', {
    Filter: [{ Name: 'tag:a+b', Value: ['x y', '1+1=2'] }],
  });
  const form = new URLSearchParams(body);
  assert.equal(form.get('Filter.1.Name'), 'tag:a+b');
  assert.deepEqual([form.get('Filter.1.Value.1'), form.get('Filter.1.Value.2')], ['x y', '1+1=2']);
});

test('a number that is not finite is refused rather than sent as NaN', () => {
  assert.throws(() => flattenQuery({ DeviceIndex: Number.NaN }), /DeviceIndex is not a finite number/);
});
