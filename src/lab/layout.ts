// Naming and addressing of a lab: one VPC on one machine. Everything derives from the lab's
// name and node count, so every command (up, down, pod, the supervisor, the emulator process)
// computes the same layout without asking anyone.
import { join } from 'node:path';
import type { VpcSpec } from '../emulator/api.ts';
import { parseCidr, subnetGateway } from '../infra/ipv4.ts';

export const LAB_STATE_ROOT = '/run/vpcnet-lab';

/** Address of IMDS, on the VPC namespace's loopback. */
export const IMDS_ADDRESS = '169.254.169.254';
/** Address of the EC2 and Kubernetes API endpoints, on the VPC namespace's loopback. */
export const SERVICE_ADDRESS = '10.0.255.254';
export const KUBE_PORT = 6443;

export const LAB_VPC: Omit<VpcSpec, 'subnets'> = {
  vpcId: 'vpc-0a1b0000000000001',
  cidr: '10.0.0.0/16',
  region: 'us-west-2',
};
const NODE_SUBNET_CIDR = '10.0.0.0/20';
export const NODE_SUBNET = {
  subnetId: 'subnet-0a1b0000000000001',
  cidr: NODE_SUBNET_CIDR,
  gateway: subnetGateway(NODE_SUBNET_CIDR),
  availabilityZone: 'us-west-2a',
} as const;
/** The subnet of VPC test hosts; the VPC namespace is its router. */
const HOST_SUBNET_CIDR = '10.0.32.0/24';
export const HOST_SUBNET = {
  cidr: HOST_SUBNET_CIDR,
  gateway: subnetGateway(HOST_SUBNET_CIDR),
  prefixLength: parseCidr(HOST_SUBNET_CIDR).prefixLength,
} as const;

/**
 * A dual-stack lab (`lab up --ipv6`): the VPC's /56 (documentation range, never routable), the
 * node subnet's /64 (subnet 0 of the VPC), and the VPC hosts' /64 outside any EC2 subnet (ff).
 */
export const LAB_IPV6 = {
  vpcCidr: '2001:db8:5e00::/56',
  nodeSubnetCidr: '2001:db8:5e00::/64',
  hostSubnet: { cidr: '2001:db8:5e00:ff::/64', gateway: '2001:db8:5e00:ff::1', prefixLength: 64 },
} as const;

export interface LabNode {
  /** Kubernetes node name. */
  readonly name: string;
  readonly netns: string;
  readonly dir: string;
  readonly agentSocket: string;
  readonly stateDir: string;
  readonly spoolDir: string;
  readonly cniBinDir: string;
  readonly cniConfDir: string;
  readonly agentLog: string;
  /**
   * Where the node's agent looks for aws-node's IPAM checkpoint (VPCNET_AWS_NODE_CHECKPOINT): the
   * lab's own, never this machine's /var/run/aws-node.
   */
  readonly awsNodeCheckpoint: string;
  /**
   * The node's own root for what reads node files (the preflight doctor: kubelet's config,
   * NetworkManager, systemd-networkd): empty unless a test or a person puts files there.
   */
  readonly nodeRoot: string;
}

export interface LabHost {
  readonly netns: string;
  readonly ip: string;
  /** The host's IPv6 address in a dual-stack lab. */
  readonly ipv6?: string;
  /** The host's link in the VPC namespace (the host's eth0 is its peer). */
  readonly vpcLink: string;
}

export interface LabLayout {
  readonly name: string;
  readonly stateDir: string;
  readonly vpcNetns: string;
  readonly vpc: VpcSpec;
  readonly nodes: readonly LabNode[];
  readonly hosts: readonly LabHost[];
  readonly emulator: {
    readonly listen: readonly { readonly host: string; readonly port: number }[];
    readonly adminSocket: string;
    readonly ec2Endpoint: string;
    readonly imdsEndpoint: string;
    readonly kubeEndpoint: string;
  };
  readonly files: {
    /** The lab description; written by the supervisor once the lab is ready. */
    readonly description: string;
    /** Written instead of the description when bringing the lab up failed. */
    readonly error: string;
    /** What `lab up --detach` asked the supervisor to build. */
    readonly upRequest: string;
    readonly pidsDir: string;
    readonly supervisorLog: string;
    readonly emulatorLog: string;
    /** The trunk driver the lab's fabric (and, with pod ENIs, its agents) use: `vlan` or `macvlan`. */
    readonly trunkDriver: string;
    /** One file per agent container (`lab up --agent-image`), named after it, for `lab down`. */
    readonly containersDir: string;
  };
}

/** What `lab up --json` prints (a stable interface: exactly these fields). */
export interface LabDescription {
  readonly name: string;
  readonly vpcNetns: string;
  readonly nodes: readonly {
    readonly name: string;
    readonly netns: string;
    readonly agentSocket: string;
    readonly cniBinDir: string;
    readonly cniConfDir: string;
  }[];
  /** `ipv6`: only in a dual-stack lab (`lab up --ipv6`). */
  readonly vpcHosts: readonly { readonly netns: string; readonly ip: string; readonly ipv6?: string }[];
  readonly emulator: {
    readonly ec2Endpoint: string;
    readonly imdsEndpoint: string;
    readonly kubeEndpoint: string;
  };
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;

/** Lab names become namespace-name prefixes (`<name>-`) and directory names. */
export function checkLabName(name: string): void {
  if (!NAME.test(name)) {
    throw new Error(
      `invalid lab name ${JSON.stringify(name)}: use 1-40 letters, digits, '_', '.' or '-', starting with a letter or digit`,
    );
  }
}

export function labStateDir(name: string): string {
  return join(LAB_STATE_ROOT, name);
}

/** `ipv6`: the lab is dual-stack (what `lab up --ipv6` asked; the emulator process is told the same). */
export function labLayout(name: string, nodeCount: number, ipv6 = false): LabLayout {
  checkLabName(name);
  const stateDir = labStateDir(name);
  const nodes: LabNode[] = [];
  for (let k = 1; k <= nodeCount; k++) {
    const nodeName = `node${k}`;
    const dir = join(stateDir, 'nodes', nodeName);
    nodes.push({
      name: nodeName,
      netns: `${name}-${nodeName}`,
      dir,
      agentSocket: join(dir, 'agent.sock'),
      stateDir: join(dir, 'state'),
      spoolDir: join(dir, 'spool'),
      cniBinDir: join(dir, 'cni', 'bin'),
      cniConfDir: join(dir, 'cni', 'net.d'),
      agentLog: join(dir, 'agent.log'),
      awsNodeCheckpoint: join(dir, 'aws-node', 'ipam.json'),
      nodeRoot: join(dir, 'root'),
    });
  }
  return {
    name,
    stateDir,
    vpcNetns: `${name}-vpc`,
    vpc: {
      ...LAB_VPC,
      ...(ipv6 ? { ipv6Cidr: LAB_IPV6.vpcCidr } : {}),
      subnets: [
        {
          subnetId: NODE_SUBNET.subnetId,
          cidr: NODE_SUBNET.cidr,
          availabilityZone: NODE_SUBNET.availabilityZone,
          ...(ipv6 ? { ipv6Cidr: LAB_IPV6.nodeSubnetCidr } : {}),
        },
      ],
    },
    nodes,
    hosts: [
      {
        netns: `${name}-host1`,
        ip: '10.0.32.10',
        ...(ipv6 ? { ipv6: '2001:db8:5e00:ff::10' } : {}),
        vpcLink: 'host1',
      },
    ],
    emulator: {
      listen: [
        { host: IMDS_ADDRESS, port: 80 },
        { host: SERVICE_ADDRESS, port: 80 },
        { host: SERVICE_ADDRESS, port: KUBE_PORT },
      ],
      adminSocket: join(stateDir, 'emulator.sock'),
      ec2Endpoint: `http://${SERVICE_ADDRESS}`,
      imdsEndpoint: `http://${IMDS_ADDRESS}`,
      kubeEndpoint: `http://${SERVICE_ADDRESS}:${KUBE_PORT}`,
    },
    files: {
      description: join(stateDir, 'lab.json'),
      error: join(stateDir, 'error.json'),
      upRequest: join(stateDir, 'up-request.json'),
      pidsDir: join(stateDir, 'pids'),
      supervisorLog: join(stateDir, 'supervisor.log'),
      emulatorLog: join(stateDir, 'emulator.log'),
      trunkDriver: join(stateDir, 'trunk-driver'),
      containersDir: join(stateDir, 'containers'),
    },
  };
}

export function labDescription(layout: LabLayout): LabDescription {
  return {
    name: layout.name,
    vpcNetns: layout.vpcNetns,
    nodes: layout.nodes.map((n) => ({
      name: n.name,
      netns: n.netns,
      agentSocket: n.agentSocket,
      cniBinDir: n.cniBinDir,
      cniConfDir: n.cniConfDir,
    })),
    vpcHosts: layout.hosts.map((h) => ({
      netns: h.netns,
      ip: h.ip,
      ...(h.ipv6 === undefined ? {} : { ipv6: h.ipv6 }),
    })),
    emulator: {
      ec2Endpoint: layout.emulator.ec2Endpoint,
      imdsEndpoint: layout.emulator.imdsEndpoint,
      kubeEndpoint: layout.emulator.kubeEndpoint,
    },
  };
}
