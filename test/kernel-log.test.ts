// The kernel-log reader the guard relies on: /dev/kmsg's record format, and a real read of this
// kernel's log that sees a line written after the mark and nothing before it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { kernelLogMark, kernelLogSince, parseKmsgRecord } from './kernel-log.ts';

test('a /dev/kmsg record parses into its sequence number and first message line', () => {
  assert.deepEqual(
    parseKmsgRecord(
      "4,1203,258219398,-;netlink: 4 bytes leftover after parsing attributes in process `vpcnet-netlink'.\n SUBSYSTEM=net\n",
    ),
    { seq: 1203, message: "netlink: 4 bytes leftover after parsing attributes in process `vpcnet-netlink'." },
  );
  assert.deepEqual(parseKmsgRecord('6,7,100,c,more;a;b'), { seq: 7, message: 'a;b' });
  assert.equal(parseKmsgRecord('no separator'), undefined);
  assert.equal(parseKmsgRecord('6,x,1,-;text'), undefined);
});

test('a line the kernel logs after the mark is found, and only lines after it', () => {
  const token = `vpcnet-kmsg-probe-${randomBytes(4).toString('hex')}`;
  writeFileSync('/dev/kmsg', `<6>${token} before\n`);
  const mark = kernelLogMark();
  writeFileSync('/dev/kmsg', `<6>${token} after\n`);
  const seen = kernelLogSince(mark, new RegExp(token));
  assert.deepEqual(
    seen.map((r) => r.message),
    [`${token} after`],
  );
  assert.ok((seen[0]?.seq ?? -1) > mark);
});
