// What the node's own files and kernel say, read under the paths the doctor is given (the node
// root, /proc/sys and /sys of the node's network namespace, the module tree), never assumed:
//   max-pods         kubelet's maxPods above what the node can address in its mode
//   rp-filter        strict reverse-path filtering on the primary ENI's link (NodePort replies)
//   network-manager  NetworkManager that would manage the secondary ENIs
//   systemd-networkd .network files matching the secondary ENIs, or networkd removing routes and
//                    rules it did not make (ManageForeignRoutingPolicyRules)
//   vlan-module      802.1q for the `vlan` trunk driver
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText } from '../../../infra/error-text.ts';
import { maxPods } from '../../../ipam/pool/max-pods.ts';
import { type DoctorContext, onNode, report, skip } from '../context.ts';

/** Where kubelet keeps its configuration on EKS's AMIs (AL2023, AL2) and under kubeadm. */
const KUBELET_CONFIGS = [
  'etc/kubernetes/kubelet/config.json',
  'etc/kubernetes/kubelet/kubelet-config.json',
  'var/lib/kubelet/config.yaml',
];
/** Names secondary ENIs get on the AMIs (eth1.. on AL2, ens6.. with predictable names). */
const SECONDARY_NAMES = ['eth1', 'eth2', 'ens6', 'ens7'];

async function text(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch(() => undefined);
}

async function filesIn(dir: string, suffix: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names
    .filter((n) => n.endsWith(suffix))
    .sort()
    .map((n) => join(dir, n));
}

/** A glob of systemd's or NetworkManager's (`*`, `?`, `[...]`) as a RegExp. */
function globOf(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

export async function checkMaxPods(ctx: DoctorContext): Promise<void> {
  const CHECK = 'max-pods';
  const { config, cloud, facts } = ctx;
  if (config === undefined || cloud === undefined || facts === undefined)
    return skip(ctx, CHECK, 'no configuration, EC2 or instance');
  if (config.ipv6.enabled) return skip(ctx, CHECK, 'IPv6 pods come from a /80: no address limit to check');
  let file: string | undefined;
  let content: string | undefined;
  for (const candidate of KUBELET_CONFIGS) {
    content = await text(onNode(ctx, candidate));
    if (content !== undefined) {
      file = candidate;
      break;
    }
  }
  if (file === undefined || content === undefined)
    return skip(
      ctx,
      CHECK,
      `no kubelet configuration under ${ctx.paths.nodeRoot} (${KUBELET_CONFIGS.join(', ')})`,
    );
  const m = /["']?maxPods["']?\s*:\s*(\d+)/.exec(content);
  if (m === null) return skip(ctx, CHECK, `/${file} sets no maxPods (kubelet's default, 110)`);
  const kubelet = Number(m[1]);
  let limits: Awaited<ReturnType<typeof cloud.aws.instanceTypeLimits>>;
  try {
    limits = await cloud.aws.instanceTypeLimits(facts.instanceType);
  } catch (err) {
    return skip(ctx, CHECK, `cannot read ${facts.instanceType}'s limits: ${errorText(err)}`);
  }
  const custom = config.eniPlacement.mode === 'custom';
  const prefix = config.prefixMode.enabled;
  const capacity = maxPods(limits, { prefixDelegation: prefix, customNetworking: custom });
  if (kubelet <= capacity) return;
  const mode = [prefix ? 'prefix mode' : 'secondary-IP mode', ...(custom ? ['custom networking'] : [])].join(
    ', ',
  );
  report(ctx, {
    check: CHECK,
    severity: 'warning',
    subject: `/${file}`,
    message: `kubelet admits up to ${kubelet} pods, but a ${facts.instanceType} addresses ${capacity} in ${mode} (${limits.maxEnis} ENIs × ${limits.ipsPerEni} addresses): pods past that wait for addresses that never come`,
    fix: `set maxPods: ${capacity} in /${file} (or kubelet's --max-pods) and restart kubelet`,
  });
}

export async function checkRpFilter(ctx: DoctorContext): Promise<void> {
  const CHECK = 'rp-filter';
  if (ctx.config?.nodePort.enabled === false)
    return skip(ctx, CHECK, 'NodePort support is off (AWS_VPC_CNI_NODE_PORT_SUPPORT=false)');
  const link = await primaryLink(ctx);
  if (link === undefined)
    return skip(ctx, CHECK, 'the primary ENI’s link was not found by its MAC under /sys/class/net');
  const read = async (dev: string) =>
    Number((await text(join(ctx.paths.procSys, 'net/ipv4/conf', dev, 'rp_filter')))?.trim());
  const [all, own] = await Promise.all([read('all'), read(link)]);
  if (Number.isNaN(all) || Number.isNaN(own))
    return skip(ctx, CHECK, `cannot read rp_filter under ${ctx.paths.procSys}`);
  // The kernel applies the larger of the two; 1 is strict, 2 loose.
  if (Math.max(all, own) !== 1) return;
  const which = own === 1 ? link : 'all';
  report(ctx, {
    check: CHECK,
    severity: 'warning',
    subject: `net.ipv4.conf.${which}.rp_filter`,
    message: `strict reverse-path filtering on ${link} (the primary ENI) drops NodePort traffic to pods on secondary ENIs`,
    fix: `sysctl -w net.ipv4.conf.${which}.rp_filter=2 (loose, as aws-node sets it), and persist it in /etc/sysctl.d`,
  });
}

/** The link carrying the primary ENI's MAC in the node's namespace (/sys/class/net). */
async function primaryLink(ctx: DoctorContext): Promise<string | undefined> {
  const mac = (await ctx.imds.get('mac').catch(() => undefined))?.trim().toLowerCase();
  const dir = join(ctx.paths.sys, 'class/net');
  const links = await readdir(dir).catch(() => [] as string[]);
  for (const l of links) {
    if ((await text(join(dir, l, 'address')))?.trim().toLowerCase() === mac) return l;
  }
  return mac === undefined && links.includes('eth0') ? 'eth0' : undefined;
}

export async function checkNetworkManager(ctx: DoctorContext): Promise<void> {
  const CHECK = 'network-manager';
  const main = onNode(ctx, 'etc/NetworkManager/NetworkManager.conf');
  const files = [main, ...(await filesIn(onNode(ctx, 'etc/NetworkManager/conf.d'), '.conf'))];
  const contents = (await Promise.all(files.map(text))).filter((c): c is string => c !== undefined);
  if (contents.length === 0) return skip(ctx, CHECK, 'no NetworkManager configuration on the node');
  const unmanaged = contents.flatMap((c) =>
    [...c.matchAll(/^\s*unmanaged-devices\s*=\s*(.+)$/gm)].flatMap((m) =>
      (m[1] ?? '').split(/[;,]/).map((x) => x.trim()),
    ),
  );
  const covered = (name: string) =>
    unmanaged.some(
      (spec) => spec.startsWith('interface-name:') && globOf(spec.slice('interface-name:'.length)).test(name),
    );
  if (SECONDARY_NAMES.some(covered)) return;
  report(ctx, {
    check: CHECK,
    severity: 'warning',
    subject: '/etc/NetworkManager',
    message:
      'NetworkManager would manage the secondary ENIs vpcnet attaches (no unmanaged-devices covers them): it runs DHCP on them and replaces their addresses and routes',
    fix: 'add /etc/NetworkManager/conf.d/99-vpcnet.conf with [keyfile] unmanaged-devices=interface-name:eth*,except:interface-name:eth0 and reload NetworkManager',
  });
}

export async function checkNetworkd(ctx: DoctorContext): Promise<void> {
  const CHECK = 'systemd-networkd';
  const dirs = [
    'etc/systemd/network',
    'run/systemd/network',
    'usr/lib/systemd/network',
    'lib/systemd/network',
  ];
  const files = (await Promise.all(dirs.map((d) => filesIn(onNode(ctx, d), '.network')))).flat();
  if (files.length === 0) return skip(ctx, CHECK, 'no systemd-networkd .network file on the node');
  const rel = (f: string) => `/${f.slice(ctx.paths.nodeRoot.replace(/\/?$/, '/').length)}`;
  for (const file of files) {
    const content = (await text(file)) ?? '';
    const names = /^\s*Name\s*=\s*(.+)$/m.exec(content)?.[1]?.split(/\s+/) ?? [];
    const unmanaged = /^\s*Unmanaged\s*=\s*(yes|true|1)\s*$/im.test(content);
    const matchSection = /^\s*\[Match\]/m.test(content);
    // A [Match] without Name (or no [Match]) matches every link unless another key narrows it.
    const narrowed = /^\s*(MACAddress|PermanentMACAddress|Path|Driver|Type|Property)\s*=/m.test(content);
    const matches = (n: string) =>
      names.length > 0
        ? names.some((g) => !g.startsWith('!') && globOf(g).test(n))
        : !narrowed || !matchSection;
    const hit = SECONDARY_NAMES.find(matches);
    if (unmanaged || hit === undefined) continue;
    report(ctx, {
      check: CHECK,
      severity: 'warning',
      subject: rel(file),
      message: `systemd-networkd manages the secondary ENIs (${rel(file)} matches ${hit}): it configures them itself and can replace vpcnet's routes`,
      fix: 'add /etc/systemd/network/05-vpcnet-secondary.network matching every link but the primary ENI ([Match] Name=eth[1-9]*) with [Link] Unmanaged=yes, then networkctl reload',
    });
  }
  const conf = [
    onNode(ctx, 'etc/systemd/networkd.conf'),
    ...(await filesIn(onNode(ctx, 'etc/systemd/networkd.conf.d'), '.conf')),
  ];
  const settings = (await Promise.all(conf.map(text))).join('\n');
  if (/^\s*ManageForeignRoutingPolicyRules\s*=\s*(no|false|0)\s*$/im.test(settings)) return;
  report(ctx, {
    check: CHECK,
    severity: 'warning',
    subject: '/etc/systemd/networkd.conf',
    message:
      'systemd-networkd removes policy rules it did not make (ManageForeignRoutingPolicyRules defaults to yes) when it reconfigures a link: pods on secondary ENIs lose their rules',
    fix: 'set ManageForeignRoutingPolicyRules=no and ManageForeignRoutes=no under [Network] in /etc/systemd/networkd.conf.d/99-vpcnet.conf',
  });
}

export async function checkVlanModule(ctx: DoctorContext): Promise<void> {
  const CHECK = 'vlan-module';
  const config = ctx.config;
  if (config === undefined || !config.enablePodEni)
    return skip(ctx, CHECK, 'pods with security groups are off');
  if (config.trunkDriver !== 'vlan') return skip(ctx, CHECK, `the trunk driver is ${config.trunkDriver}`);
  const { sys, modules, kernelRelease } = ctx.paths;
  const loaded = await stat(join(sys, 'module/8021q')).then(
    () => true,
    () => false,
  );
  if (loaded) return;
  const tree = join(modules, kernelRelease);
  const builtin = ((await text(join(tree, 'modules.builtin'))) ?? '').includes('/8021q.ko');
  const loadable = (await readdir(join(tree, 'kernel/net/8021q')).catch(() => [] as string[])).some((n) =>
    n.startsWith('8021q.ko'),
  );
  if (builtin || loadable) return;
  report(ctx, {
    check: CHECK,
    severity: 'error',
    subject: `kernel ${kernelRelease}`,
    message: `the vlan trunk driver (VPCNET_TRUNK_DRIVER=vlan) needs 802.1q, which this kernel has neither loaded, built in nor as a module under ${tree}: pods with security groups get no network`,
    fix: 'use a kernel with 8021q (modprobe 8021q), or set VPCNET_TRUNK_DRIVER=macvlan',
  });
}
