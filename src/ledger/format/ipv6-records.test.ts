// IPv6 attachments in the ledger: they round-trip through the snapshot and the journal, and their
// pod address is recorded under a kind of its own (ipv6Address), which an agent without IPv6 does
// not know: its parser refuses the record, naming it, instead of reading it as an IPv4 pod's
// (docs/design.md, IPv6 pods).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Attachment } from '../../plan/attachment.ts';
import { planIpv6Pod } from '../../plan/ipv6-pod-plan.ts';
import { Ledger } from '../ledger.ts';
import { FileLedgerStore } from '../storage/store.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { LedgerFormatError } from './json-fields.ts';
import { parseResource } from './records.ts';

const PATH = '/var/lib/vpcnet/ledger.json';

function ipv6Attachment(containerId: string, ip: string, v4EgressIp?: string): Attachment {
  const key = { network: 'vpcnet', containerId, ifName: 'eth0' };
  return {
    key,
    pod: { namespace: 'default', name: `pod-${containerId}`, uid: `uid-${containerId}` },
    netns: `/var/run/netns/${containerId}`,
    createdAt: 1000,
    resources: planIpv6Pod({
      key,
      vethPrefix: 'vpc',
      ip,
      eniId: 'eni-primary',
      mtu: 9001,
      ...(v4EgressIp === undefined ? {} : { v4EgressIp }),
    }),
  };
}

test('IPv6 attachments round-trip through the journal and through a snapshot', async () => {
  const fs = new MemoryLedgerFs();
  const clock = { now: () => 5000 };
  const ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  const a = ipv6Attachment('a', '2001:db8:5e00:0:1::5', '169.254.172.2');
  const b = ipv6Attachment('b', '2001:db8:5e00:0:1::6');
  ledger.put(a);
  await ledger.commit();
  ledger.put(b);
  ledger.addCooling('2001:db8:5e00:0:1::7', 'eni-primary', 4000);
  await ledger.commit();
  const reopened = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  assert.deepEqual(reopened.get(a.key), a);
  assert.deepEqual(reopened.get(b.key), b);
  assert.deepEqual(reopened.coolingAddresses(), [
    { ip: '2001:db8:5e00:0:1::7', eniId: 'eni-primary', freedAt: 4000 },
  ]);
  assert.equal(reopened.findByIp('2001:db8:5e00:0:1::5')?.key.containerId, 'a');
  // Through a snapshot alone (the journal compacted into it).
  const store = new FileLedgerStore(PATH, fs);
  await store.save(reopened.snapshot());
  const fromSnapshot = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
  assert.deepEqual(fromSnapshot.get(a.key), a);
  assert.match(fs.files.get(PATH) ?? '', /"kind":"ipv6Address"/);
});

test('a resource kind the agent does not know is refused with its place named, never read as another', () => {
  const [, , ipv6Address] = ipv6Attachment('a', '2001:db8::5').resources;
  assert.equal(ipv6Address?.kind, 'ipv6Address');
  // What an agent from before IPv6 meets: a kind it has no entry for.
  assert.throws(
    () => parseResource({ ...ipv6Address, kind: 'ipv6AddressFromTheFuture' }, 'attachments[0].resources[2]'),
    (err: unknown) =>
      err instanceof LedgerFormatError &&
      /attachments\[0\]\.resources\[2\]\.kind/.test(err.message) &&
      /unknown resource kind/.test(err.message),
  );
});
