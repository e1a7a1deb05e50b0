// Preloaded into every test process (scripts/test.mjs, and the runs under UML and in the VM): marks
// the kernel's log when the file starts and fails the file when, by its end, the kernel logged a line
// naming vpcnet's netlink helper (a malformed request: "netlink: 4 bytes leftover after parsing
// attributes in process `vpcnet-netlink'"). Most files under test/ run alone (kernel-turn.ts) and unit
// files use no kernel, so the file named is the one whose requests the kernel refused to read
// cleanly; two labs that share the turn are both failed, and one of them is it.
import { relative } from 'node:path';
import { after } from 'node:test';
import { kernelLogMark, kernelLogSince } from './kernel-log.ts';

const HELPER_NAMED = /vpcnet-netlink/;
const underCi = process.env.CI === 'true' || process.env.CI === '1';

let mark: number | undefined;
let unreadable = '';
try {
  mark = kernelLogMark();
} catch (err) {
  unreadable = (err as Error).message;
}

after(() => {
  if (mark === undefined) {
    // Outside CI a host that hides its log (not root, kernel.dmesg_restrict) only loses this check.
    if (underCi)
      throw new Error(`the kernel log (/dev/kmsg) cannot be read, so its warnings go unseen: ${unreadable}`);
    return;
  }
  const lines = kernelLogSince(mark, HELPER_NAMED);
  if (lines.length === 0) return;
  const file = process.argv.find((a) => a.endsWith('.test.ts'));
  throw new Error(
    `the kernel logged ${lines.length} line(s) naming vpcnet-netlink while ${file ? relative(process.cwd(), file) : 'this file'} ran:\n` +
      lines.map((l) => `  ${l.message}`).join('\n'),
  );
});
