import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chainedPluginConfig, type NetConfList } from './cni-runtime.ts';

const list: NetConfList = { cniVersion: '1.0.0', name: 'vpcnet', plugins: [] };
const portmap = { type: 'portmap', capabilities: { portMappings: true }, snat: true };
const mappings = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }];

test("a plugin gets the list's name and cniVersion and the previous result", () => {
  const conf = chainedPluginConfig(list, { type: 'tuning', cniVersion: '0.3.1', name: 'x' }, { ips: [] });
  assert.deepEqual(conf, { type: 'tuning', cniVersion: '1.0.0', name: 'vpcnet', prevResult: { ips: [] } });
});

test('the first plugin of an ADD gets no prevResult key at all', () => {
  assert.equal(Object.hasOwn(chainedPluginConfig(list, { type: 'vpcnet' }, undefined), 'prevResult'), false);
});

test('a plugin receives in runtimeConfig only the capability args its capabilities declare', () => {
  const args = { portMappings: mappings, bandwidth: { ingressRate: 8000 }, ips: ['10.0.0.9/32'] };
  assert.deepEqual(chainedPluginConfig(list, portmap, undefined, args).runtimeConfig, {
    portMappings: mappings,
  });
  const bandwidth = { type: 'bandwidth', capabilities: { bandwidth: true, portMappings: false } };
  assert.deepEqual(chainedPluginConfig(list, bandwidth, undefined, args).runtimeConfig, {
    bandwidth: { ingressRate: 8000 },
  });
  assert.equal(chainedPluginConfig(list, { type: 'vpcnet' }, undefined, args).runtimeConfig, undefined);
});

test("capability args replace a plugin's static runtimeConfig; without any, the static one stays", () => {
  const withStatic = { ...portmap, runtimeConfig: { portMappings: [], other: 1 } };
  assert.deepEqual(
    chainedPluginConfig(list, withStatic, undefined, { portMappings: mappings }).runtimeConfig,
    {
      portMappings: mappings,
    },
  );
  assert.deepEqual(chainedPluginConfig(list, withStatic, undefined, {}).runtimeConfig, {
    portMappings: [],
    other: 1,
  });
});
