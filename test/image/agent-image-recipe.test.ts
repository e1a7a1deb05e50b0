// The image recipe (scripts/image-recipe.ts) as data: the base's cache key, mmdebstrap's and
// podman build's arguments. No podman needed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BASE_RECIPE,
  baseImageTag,
  imageNames,
  mmdebstrapArgv,
  PARTNER_PLUGINS_DIR,
  podmanBuildArgv,
} from '../../scripts/image-recipe.ts';

const sources = 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n';

test('the base tag is stable for one recipe and sources, and changes with either', () => {
  const tag = baseImageTag(BASE_RECIPE, sources);
  assert.match(tag, /^localhost\/vpcnet-base:[0-9a-f]{16}$/);
  assert.equal(baseImageTag({ ...BASE_RECIPE }, sources), tag);
  assert.notEqual(
    baseImageTag({ ...BASE_RECIPE, packages: [...BASE_RECIPE.packages, 'curl'] }, sources),
    tag,
  );
  assert.notEqual(baseImageTag({ ...BASE_RECIPE, extractHook: 'true' }, sources), tag);
  assert.notEqual(baseImageTag(BASE_RECIPE, `${sources}# another snapshot\n`), tag);
});

test('mmdebstrap unpacks only the listed packages, without docs, keeping portmap and bandwidth', () => {
  const argv = mmdebstrapArgv(BASE_RECIPE, '/etc/apt/sources.list.d/debian.sources', '/tmp/x/base.tar');
  assert.equal(argv[0], 'mmdebstrap');
  assert.ok(argv.includes('--variant=extract'));
  const include = argv
    .find((a) => a.startsWith('--include='))!
    .slice('--include='.length)
    .split(',');
  for (const p of [
    'iproute2',
    'nftables',
    'iptables',
    'containernetworking-plugins',
    'libstdc++6',
    'busybox',
  ]) {
    assert.ok(include.includes(p), `${p} is included`);
  }
  assert.ok(argv.includes('--dpkgopt=path-exclude=/usr/share/doc/*'));
  assert.ok(argv.includes('--dpkgopt=path-include=/usr/lib/cni/portmap'));
  assert.ok(argv.includes('--dpkgopt=path-include=/usr/lib/cni/bandwidth'));
  const hook = argv.find((a) => a.startsWith('--extract-hook='))!;
  assert.ok(hook.includes(PARTNER_PLUGINS_DIR));
  assert.ok(hook.includes('"$1/usr/bin/env"'), 'the bundles find node through /usr/bin/env');
  assert.deepEqual(argv.slice(-3), ['bookworm', '/tmp/x/base.tar', '/etc/apt/sources.list.d/debian.sources']);
});

test('podman build tags the version and latest, on the cached base, with limits it may set here', () => {
  const names = imageNames('0.1.0');
  assert.deepEqual(names, { versioned: 'localhost/vpcnet:0.1.0', latest: 'localhost/vpcnet:latest' });
  const argv = podmanBuildArgv({
    base: 'localhost/vpcnet-base:abc',
    containerfile: '/repo/image/Containerfile',
    context: '/tmp/ctx',
    names,
    version: '0.1.0',
  });
  assert.deepEqual(argv.slice(0, 4), ['podman', '--runtime', 'runc', 'build']);
  assert.ok(argv.join(' ').includes('--ulimit nofile=4096:4096 --ulimit nproc=4096:4096'));
  assert.ok(argv.join(' ').includes('--build-arg BASE=localhost/vpcnet-base:abc'));
  // The agent's Node flags reach the image's NODE_OPTIONS (image/Containerfile).
  assert.ok(argv.join(' ').includes('--build-arg AGENT_NODE_OPTIONS=--max-semi-space-size=2'));
  assert.ok(argv.join(' ').includes('--tag localhost/vpcnet:0.1.0 --tag localhost/vpcnet:latest'));
  assert.ok(argv.includes('--pull=never'));
  assert.equal(argv.at(-1), '/tmp/ctx');
});
