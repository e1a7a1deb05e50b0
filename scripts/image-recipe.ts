// What `npm run image` builds, as data: the Debian base (mmdebstrap's arguments) and the podman
// build on top of it. Pure: scripts/image.ts runs the commands. The base is tagged by a hash of its
// recipe and of the apt sources it is made from, so a second build reuses it.
import { createHash } from 'node:crypto';
import { AGENT_NODE_FLAGS } from '../src/config/agent-node-flags.ts';
import { PODMAN, PODMAN_ULIMITS } from '../src/lab/podman.ts';

export interface BaseRecipe {
  readonly suite: string;
  /** `extract`: only the packages below and their dependencies, unpacked; no dpkg, no apt, no shell of Debian's. */
  readonly variant: string;
  readonly packages: readonly string[];
  /** dpkg path filters: what of those packages is left out of the image. */
  readonly dpkgOptions: readonly string[];
  /** Runs once the packages are unpacked (`$1` is the root); mmdebstrap's extract hook. */
  readonly extractHook: string;
}

/** Where the chained reference plugins go (the init container's --partner-plugins-dir). */
export const PARTNER_PLUGINS_DIR = '/opt/vpcnet/cni-partners';
export const PARTNER_PLUGINS = ['portmap', 'bandwidth'] as const;
/** busybox's applets, at the end of the image's PATH (image/Containerfile). */
export const BUSYBOX_APPLETS_DIR = '/opt/busybox/bin';

const partnerPaths = PARTNER_PLUGINS.map((p) => `"$1/usr/lib/cni/${p}"`).join(' ');

export const BASE_RECIPE: BaseRecipe = {
  suite: 'bookworm',
  variant: 'extract',
  packages: [
    // Node's shared libraries (the runtime is copied in by the build, see image/README.md).
    'libc6',
    'libstdc++6',
    'libgcc-s1',
    // The agent runs `nft -f` once at start; support bundles run `ip` and `nft`.
    'iproute2',
    'nftables',
    // Both iptables backends (nft and legacy): adopting aws-node's pods removes the chains aws-node
    // left through whichever one the node's iptables uses.
    'iptables',
    // portmap and bandwidth, chained after vpcnet by the conflist.
    'containernetworking-plugins',
    // /bin/sh and /usr/bin/env (the bundles' `#!/usr/bin/env node`), 0.8 MB.
    'busybox',
  ],
  dpkgOptions: [
    'path-exclude=/usr/share/man/*',
    'path-exclude=/usr/share/info/*',
    'path-exclude=/usr/share/locale/*',
    'path-exclude=/usr/share/lintian/*',
    'path-exclude=/usr/share/doc/*',
    'path-include=/usr/share/doc/*/copyright',
    // 14 plugins of ~2.5 MB each, of which the conflist chains two.
    'path-exclude=/usr/lib/cni/*',
    ...PARTNER_PLUGINS.map((p) => `path-include=/usr/lib/cni/${p}`),
  ],
  extractHook: [
    `mkdir -p "$1${PARTNER_PLUGINS_DIR}"`,
    `mv ${partnerPaths} "$1${PARTNER_PLUGINS_DIR}/"`,
    'ln -s busybox "$1/bin/sh"',
    'ln -s /bin/busybox "$1/usr/bin/env"',
    // The other applets (ls, cat, ps...) for a person in a shell, last on PATH: never instead of
    // Debian's ip or nft.
    `mkdir -p "$1${BUSYBOX_APPLETS_DIR}"`,
    `chroot "$1" /bin/busybox --install -s ${BUSYBOX_APPLETS_DIR}`,
  ].join(' && '),
};

/** Bumped when what the build does with the recipe changes in a way the recipe does not show. */
const RECIPE_FORMAT = 1;

/** `localhost/vpcnet-base:<hash>`: the recipe and the apt sources it reads decide the base's content. */
export function baseImageTag(recipe: BaseRecipe, aptSources: string): string {
  const hash = createHash('sha256')
    .update(JSON.stringify({ format: RECIPE_FORMAT, recipe, aptSources }))
    .digest('hex');
  return `localhost/vpcnet-base:${hash.slice(0, 16)}`;
}

/** mmdebstrap's argv: a root tarball at `outTar` from the archive `sourcesFile` names. */
export function mmdebstrapArgv(recipe: BaseRecipe, sourcesFile: string, outTar: string): string[] {
  return [
    'mmdebstrap',
    '--quiet',
    `--variant=${recipe.variant}`,
    `--include=${recipe.packages.join(',')}`,
    ...recipe.dpkgOptions.map((o) => `--dpkgopt=${o}`),
    `--extract-hook=${recipe.extractHook}`,
    recipe.suite,
    outTar,
    sourcesFile,
  ];
}

export interface ImageNames {
  readonly versioned: string;
  readonly latest: string;
}

export function imageNames(version: string): ImageNames {
  return { versioned: `localhost/vpcnet:${version}`, latest: 'localhost/vpcnet:latest' };
}

/** `podman build` of image/Containerfile on `base`, from the context dir the script prepared. */
export function podmanBuildArgv(opts: {
  readonly base: string;
  readonly containerfile: string;
  readonly context: string;
  readonly names: ImageNames;
  readonly version: string;
}): string[] {
  return [
    ...PODMAN,
    'build',
    '--quiet',
    ...PODMAN_ULIMITS,
    '--pull=never',
    '--build-arg',
    `BASE=${opts.base}`,
    '--build-arg',
    `VERSION=${opts.version}`,
    '--build-arg',
    `AGENT_NODE_OPTIONS=${AGENT_NODE_FLAGS.join(' ')}`,
    '--file',
    opts.containerfile,
    '--tag',
    opts.names.versioned,
    '--tag',
    opts.names.latest,
    opts.context,
  ];
}
