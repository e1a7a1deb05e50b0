import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseXml, XmlShapeError } from './xml-reader.ts';

const DESCRIBE_SUBNETS = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>7a62c49f-347e-4fc4-9331-6e8eEXAMPLE</requestId>
    <subnetSet>
        <item>
            <subnetId>subnet-9d4a7b6c</subnetId>
            <cidrBlock>10.0.1.0/24</cidrBlock>
            <availableIpAddressCount>251</availableIpAddressCount>
            <defaultForAz>false</defaultForAz>
            <tagSet/>
        </item>
        <item>
            <subnetId>subnet-6e7f829e</subnetId>
            <cidrBlock>10.0.0.0/24</cidrBlock>
        </item>
    </subnetSet>
</DescribeSubnetsResponse>`;

test('a describe reply reads as elements with <item> lists, namespaces and whitespace ignored', () => {
  const root = parseXml(DESCRIBE_SUBNETS);
  assert.equal(root.name, 'DescribeSubnetsResponse');
  assert.equal(root.string('requestId'), '7a62c49f-347e-4fc4-9331-6e8eEXAMPLE');
  const subnets = root.items('subnetSet');
  assert.deepEqual(
    subnets.map((s) => [s.string('subnetId'), s.string('cidrBlock')]),
    [
      ['subnet-9d4a7b6c', '10.0.1.0/24'],
      ['subnet-6e7f829e', '10.0.0.0/24'],
    ],
  );
  assert.equal(subnets[0]?.int('availableIpAddressCount'), 251);
  assert.equal(subnets[0]?.bool('defaultForAz'), false);
  assert.deepEqual(subnets[0]?.items('tagSet'), [], 'a self-closed list is empty');
  assert.deepEqual(subnets[1]?.items('tagSet'), [], 'an absent list is empty');
  assert.equal(subnets[1]?.string('availableIpAddressCount'), undefined);
});

test('entities, character references and CDATA decode to their characters', () => {
  const root = parseXml(
    '<r><d>a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos; &#60;&#x3E; &#x1F600;</d><c><![CDATA[<raw> & ]]></c><e></e></r>',
  );
  assert.equal(root.string('d'), `a <b> & "c" 'd' <> 😀`);
  assert.equal(root.string('c'), '<raw> & ');
  assert.equal(root.string('e'), '', 'an empty element has empty text, not none');
});

test('a field of the wrong shape is an XmlShapeError naming its path', () => {
  const root = parseXml(
    '<R><set><item><deviceIndex>one</deviceIndex><primary>yes</primary></item></set></R>',
  );
  const item = root.items('set')[0];
  assert.throws(() => item?.int('deviceIndex'), {
    name: 'XmlShapeError',
    message: 'R.set.item.deviceIndex is not an integer (got "one")',
  });
  assert.throws(() => item?.bool('primary'), /R\.set\.item\.primary is not true or false/);
});

test('a document that is not well-formed XML is refused', () => {
  for (const bad of ['', 'not xml', '<a><b></a>', '<a>', '<a></a><b></b>', '<a>&bogus;</a>', '<a>&amp</a>']) {
    assert.throws(() => parseXml(bad), XmlShapeError, JSON.stringify(bad));
  }
});
