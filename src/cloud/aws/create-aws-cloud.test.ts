// Building the driver from the environment: which EC2 endpoint it talks to (upstream's
// AWS_EC2_ENDPOINT, the SDKs' AWS_ENDPOINT_URL_EC2), a bad one refused naming the variable, and
// AWS_EC2_METADATA_DISABLED keeping the instance profile out of the credential chain.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { LaunchedInstance } from '../../emulator/api.ts';
import { startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { createAwsCloud } from './create-aws-cloud.ts';

let emu: TestEmulator;
let node: LaunchedInstance;
let home: string;
/** Nothing listens there: a call sent to it fails. */
const NOWHERE = 'http://127.0.0.1:9';

before(async () => {
  emu = await startTestEmulator({ imdsFallbackInstance: () => node?.instanceId });
  node = await emu.emulator.launchInstance({
    instanceType: 't3.medium',
    subnetId: 'subnet-aaaaaaaaaaaaaaaaa',
  });
  home = await mkdtemp(join(tmpdir(), 'vpcnet-home-'));
});
after(async () => {
  await emu.close();
  await rm(home, { recursive: true, force: true });
});

const KEYS = { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'x', AWS_REGION: 'us-west-2' };

test('AWS_EC2_ENDPOINT is the EC2 endpoint, and wins over AWS_ENDPOINT_URL_EC2 as in aws-node', async () => {
  const cloud = await createAwsCloud({
    env: { ...KEYS, AWS_EC2_ENDPOINT: emu.url, AWS_ENDPOINT_URL_EC2: NOWHERE },
    imds: { endpoint: emu.url },
    home,
  });
  try {
    const enis = await cloud.describeInstanceEnis(node.instanceId);
    assert.equal(enis[0]?.eniId, node.primaryEni.eniId);
  } finally {
    cloud.close();
  }
});

test('AWS_ENDPOINT_URL_EC2 serves when AWS_EC2_ENDPOINT is unset or blank', async () => {
  const cloud = await createAwsCloud({
    env: { ...KEYS, AWS_EC2_ENDPOINT: ' ', AWS_ENDPOINT_URL_EC2: emu.url },
    imds: { endpoint: emu.url },
    home,
  });
  try {
    assert.equal((await cloud.describeInstanceEnis(node.instanceId)).length, 1);
  } finally {
    cloud.close();
  }
});

test('an endpoint that is no http(s) URL stops the start, naming the variable', async () => {
  await assert.rejects(
    createAwsCloud({
      env: { ...KEYS, AWS_EC2_ENDPOINT: 'ec2.internal:443' },
      imds: { endpoint: emu.url },
      home,
    }),
    /AWS_EC2_ENDPOINT must be an http\(s\) URL of the EC2 API, got 'ec2\.internal:443'/,
  );
});

test('AWS_EC2_METADATA_DISABLED: with no other credentials the driver is not built', async () => {
  await assert.rejects(
    createAwsCloud({
      env: { AWS_REGION: 'us-west-2', AWS_EC2_ENDPOINT: emu.url },
      imds: { endpoint: emu.url },
      metadataDisabled: true,
      home,
    }),
    /AWS_EC2_METADATA_DISABLED=true rules out the instance profile/,
  );
});
