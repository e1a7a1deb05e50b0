// The lab's fabric: turns the emulator's ENI state into real links between network namespaces.
// Each attached ENI is a veth pair: the VPC side (named from the ENI id) lives in the VPC namespace
// and carries the subnet gateway as a /32 so it answers the node's ARP for it; the node side is
// eth<deviceIndex> in the instance's namespace, with the ENI's MAC. Every address of the ENI is
// routed to its link with a permanent neighbour entry, because the real VPC delivers to the
// ENI's MAC without ARP.
import { spawn } from 'node:child_process';
import type { Fabric, FabricEni } from '../api.ts';

/** Runs `ip [-n netns] -batch -` with the given lines; rejects with the lines and the kernel's message. */
export type IpBatchRunner = (
  netns: string | undefined,
  lines: readonly string[],
  force?: boolean,
) => Promise<void>;

/** Sets sysctls (`net.ipv4.conf.X.proxy_arp` → value) inside `netns`. */
export type SysctlWriter = (netns: string, settings: Readonly<Record<string, string>>) => Promise<void>;

export interface LinuxFabricOptions {
  /**
   * Namespace of the VPC side. Always named, also when the emulator runs inside it: a fabric
   * started in the wrong place then fails instead of changing the namespace it happens to be in.
   */
  readonly vpcNetns: string;
  readonly ip?: IpBatchRunner;
  readonly sysctl?: SysctlWriter;
}

/** Failure of an `ip` invocation, with what was asked and what the kernel answered. */
export class IpCommandError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || 'failed'}`);
    this.name = 'IpCommandError';
  }
}

export function runIpBatch(
  netns: string | undefined,
  lines: readonly string[],
  force = false,
): Promise<void> {
  if (lines.length === 0) return Promise.resolve();
  const args = [...(netns === undefined ? [] : ['-n', netns]), ...(force ? ['-force'] : []), '-batch', '-'];
  const command = `ip ${args.join(' ')} <<< ${JSON.stringify(lines.join('; '))}`;
  return new Promise((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (err) => reject(new IpCommandError(command, err.message)));
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new IpCommandError(command, stderr));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${lines.join('\n')}\n`);
  });
}

export async function writeSysctls(netns: string, settings: Readonly<Record<string, string>>): Promise<void> {
  const entries = Object.entries(settings);
  const args = ['netns', 'exec', netns, 'sysctl', '-q', '-w', ...entries.map(([k, v]) => `${k}=${v}`)];
  await new Promise<void>((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (err) => reject(new IpCommandError(`ip ${args.join(' ')}`, err.message)));
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new IpCommandError(`ip ${args.join(' ')}`, stderr)),
    );
  });
}

/** VPC-side link name of an ENI: `v` + the last 12 hex digits of its id (fits IFNAMSIZ). */
export function vpcLinkName(eniId: string): string {
  const hex = eniId.replace(/^eni-/, '').replace(/[^0-9a-f]/gi, '');
  return `v${hex.slice(-12)}`;
}

/** Messages that mean "already gone"; removal is idempotent. */
const GONE = /No such process|Cannot find device|No such file or directory|does not exist|Cannot assign/;

export class LinuxFabric implements Fabric {
  private readonly vpcNetns: string;
  private readonly ip: IpBatchRunner;
  private readonly sysctl: SysctlWriter;

  constructor(opts: LinuxFabricOptions) {
    this.vpcNetns = opts.vpcNetns;
    this.ip = opts.ip ?? runIpBatch;
    this.sysctl = opts.sysctl ?? writeSysctls;
  }

  async eniAttached(netns: string, deviceIndex: number, eni: FabricEni): Promise<void> {
    const vpcSide = vpcLinkName(eni.eniId);
    const nodeSide = `eth${deviceIndex}`;
    try {
      await this.attach(netns, deviceIndex, eni, vpcSide, nodeSide);
    } catch (err) {
      // Leave no half-made link behind: the pair goes with its VPC side.
      await this.removing([`link del ${vpcSide}`]).catch(() => undefined);
      throw err;
    }
  }

  private async attach(
    netns: string,
    deviceIndex: number,
    eni: FabricEni,
    vpcSide: string,
    nodeSide: string,
  ): Promise<void> {
    await this.ip(this.vpcNetns, [
      `link add ${vpcSide} type veth peer name ${nodeSide} netns ${netns} address ${eni.mac}`,
      `addr replace ${eni.gateway}/32 dev ${vpcSide}`,
    ]);
    // The VPC router answers ARP for every address it routes to another link, as the real VPC
    // does within a subnet, so a node reaches another node of its subnet on-link; at once
    // (proxy ARP replies are otherwise delayed up to 0.8 s).
    await this.sysctl(this.vpcNetns, {
      [`net.ipv4.conf.${vpcSide}.proxy_arp`]: '1',
      [`net.ipv4.neigh.${vpcSide}.proxy_delay`]: '0',
    });
    await this.ip(this.vpcNetns, [`link set ${vpcSide} up`, ...routeLines(vpcSide, eni, [eni.primaryIp])]);
    const node = [`link set ${nodeSide} up`];
    if (deviceIndex === 0) {
      // What the instance's OS does by DHCP on its primary interface.
      node.push(
        `addr add ${eni.primaryIp}/${prefixLength(eni.subnetCidr)} dev ${nodeSide}`,
        `route replace default via ${eni.gateway} dev ${nodeSide}`,
      );
    }
    await this.ip(netns, node);
  }

  async eniDetached(_netns: string, _deviceIndex: number, eni: FabricEni): Promise<void> {
    // Deleting one end removes the pair, and with it every route through the VPC side.
    await this.removing([`link del ${vpcLinkName(eni.eniId)}`]);
  }

  async addressesAssigned(eni: FabricEni, ips: readonly string[]): Promise<void> {
    await this.ip(this.vpcNetns, routeLines(vpcLinkName(eni.eniId), eni, ips));
  }

  async addressesUnassigned(eni: FabricEni, ips: readonly string[]): Promise<void> {
    const vpcSide = vpcLinkName(eni.eniId);
    const lines: string[] = [];
    for (const ip of ips) {
      if (ip.includes('/')) lines.push(`route del ${ip} dev ${vpcSide}`);
      else lines.push(`route del ${ip}/32 dev ${vpcSide}`, `neigh del ${ip} dev ${vpcSide}`);
    }
    await this.removing(lines);
  }

  /** Runs removals to the end; fails only for errors other than "already gone". */
  private async removing(lines: readonly string[]): Promise<void> {
    try {
      await this.ip(this.vpcNetns, lines, true);
    } catch (err) {
      if (!(err instanceof IpCommandError)) throw err;
      const real = err.stderr
        .split('\n')
        .filter((l) => l.trim() !== '' && !GONE.test(l) && !/^Command failed/.test(l));
      if (real.length > 0) throw err;
    }
  }
}

/** An address is routed to the ENI's link and resolves to the ENI's MAC; a prefix goes via the primary IP. */
function routeLines(vpcSide: string, eni: FabricEni, ips: readonly string[]): string[] {
  const lines: string[] = [];
  for (const ip of ips) {
    if (ip.includes('/')) {
      lines.push(`route replace ${ip} via ${eni.primaryIp} dev ${vpcSide} onlink`);
    } else {
      lines.push(
        `route replace ${ip}/32 dev ${vpcSide}`,
        `neigh replace ${ip} lladdr ${eni.mac} dev ${vpcSide} nud permanent`,
      );
    }
  }
  return lines;
}

function prefixLength(cidr: string): string {
  const prefix = cidr.split('/')[1];
  if (prefix === undefined) throw new Error(`not a CIDR: ${cidr}`);
  return prefix;
}
