// The doctor's table of EC2 actions is the driver's: every action name src/cloud/aws/*.ts sends is
// in it and nothing else, and which of them the doctor dry-runs agrees with EC2's model (the AWS
// SDK's request shapes: a DryRun member or none).
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DRIVER_EC2_ACTIONS } from './ec2-actions.ts';

const cloudDir = fileURLToPath(new URL('../../cloud/aws/', import.meta.url));
const EC2_VERBS =
  /'((?:Describe|Get|Create|Delete|Attach|Detach|Modify|Assign|Unassign|Associate|Disassociate|Replace|Reset|Enable|Disable)[A-Z][A-Za-z0-9]+)'/g;

async function driverActions(): Promise<Set<string>> {
  const files = (await readdir(cloudDir)).filter((f) => /\.ts$/.test(f) && !f.endsWith('.test.ts'));
  assert.ok(files.length >= 3, `the driver's files: ${files.join(', ')}`);
  const found = new Set<string>();
  for (const f of files)
    for (const m of (await readFile(join(cloudDir, f), 'utf8')).matchAll(EC2_VERBS)) found.add(m[1] ?? '');
  return found;
}

test('the doctor probes every EC2 action the cloud driver sends, and only those', async () => {
  const sent = await driverActions();
  assert.ok(
    sent.has('CreateNetworkInterface') &&
      sent.has('AssignIpv6Addresses') &&
      sent.has('GetSubnetCidrReservations'),
    [...sent].join(' '),
  );
  assert.deepEqual([...sent].sort(), Object.keys(DRIVER_EC2_ACTIONS).sort());
});

test('dry runs are used exactly where EC2’s API has DryRun; the four address actions go to the simulator', async () => {
  const models = fileURLToPath(
    new URL('../../../node_modules/@aws-sdk/client-ec2/dist-types/models/', import.meta.url),
  );
  const text = (
    await Promise.all((await readdir(models)).map((f) => readFile(join(models, f), 'utf8')))
  ).join('\n');
  const withoutDryRun: string[] = [];
  for (const [action, entry] of Object.entries(DRIVER_EC2_ACTIONS)) {
    const shape = new RegExp(`export interface ${action}Request \\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1];
    assert.ok(shape !== undefined, `EC2's model has ${action}`);
    assert.equal(entry.probe.dryRun, /\bDryRun\?:/.test(shape), `${action}: DryRun in EC2's model`);
    if (!entry.probe.dryRun) withoutDryRun.push(action);
  }
  assert.deepEqual(withoutDryRun.sort(), [
    'AssignIpv6Addresses',
    'AssignPrivateIpAddresses',
    'UnassignIpv6Addresses',
    'UnassignPrivateIpAddresses',
  ]);
});
