import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRoutes } from './ip-json.ts';

test('IPv6 routes are read like IPv4 ones (host routes without their length); link-local and local-table routes are left out', () => {
  // As `ip -d -j route show table all` prints them on a node with an IPv6 pod.
  const routes = parseRoutes([
    {
      type: 'unicast',
      dst: '2001:db8::5',
      dev: 'vpc1',
      table: 'main',
      protocol: 'boot',
      scope: 'global',
      metric: 1024,
    },
    { type: 'unicast', dst: 'fe80::/64', dev: 'vpc1', table: 'main', protocol: 'kernel', metric: 256 },
    { type: 'unicast', dst: 'default', gateway: 'fe80::1', dev: 'eth0', table: 'main', metric: 1024 },
    { type: 'local', dst: '2001:db8::5', dev: 'eth0', table: 'local', metric: 0 },
    { type: 'unicast', dst: '169.254.172.2', dev: 'vpc2', table: 'main', scope: 'link' },
  ]);
  assert.deepEqual(routes, [
    { dst: '2001:db8::5', table: 254, dev: 'vpc1', scope: 'global', metric: 1024 },
    { dst: 'default', table: 254, gateway: 'fe80::1', dev: 'eth0', metric: 1024 },
    { dst: '169.254.172.2', table: 254, dev: 'vpc2', scope: 'link' },
  ]);
});
