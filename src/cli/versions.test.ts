// Every executable says one version, vpcnet's (src/infra/version.ts): the plugin's layer and the C
// sources cannot import it, so their copies are held to it here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { PLUGIN_VERSION } from '../cni/wire.ts';
import { VPCNET_VERSION } from '../infra/version.ts';

const source = (path: string) => readFile(new URL(`../${path}`, import.meta.url), 'utf8');

test('the plugin, its C forwarder and the netlink helper carry vpcnet’s version', async () => {
  assert.equal(PLUGIN_VERSION, VPCNET_VERSION);
  assert.ok((await source('plugin/native/wire.h')).includes(`#define VPCNET_VERSION "${VPCNET_VERSION}"`));
  assert.ok(
    (await source('dataplane/netlink/native/main.c')).includes(`#define VPCNET_VERSION "${VPCNET_VERSION}"`),
  );
});
