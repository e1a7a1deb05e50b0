// What aws-node leaves in the node's firewall once it is gone: its SNAT chains (`AWS-SNAT-CHAIN-N`
// in nat, jumped to from POSTROUTING), its connmark chains (`AWS-CONNMARK-CHAIN-N`, from nat
// PREROUTING) and the restore-mark and NodePort rules it put straight into PREROUTING (nat and
// mangle), all through iptables, by either backend (nft or legacy, whichever the node's iptables
// uses); and, from 1.21 on, the nftables table `ip aws-cni` for the connmark. vpcnet does the same
// jobs with its own nftables table, so after adoption these only double the work, and their SNAT
// source and excluded CIDRs no longer follow the node's settings: they are removed.
//
// Only what aws-node makes is touched: chains by their exact names, and in the built-in chains the
// rules that jump to them or carry one of aws-node's own comments. Removal is one
// `iptables-restore --noflush` per table (all or nothing), after the rules are read back.
import { NOT_STARTED } from '../../infra/process.ts';
import type { AwsNodeFirewallRemoval } from '../kernel.ts';
import type { CommandRunner } from './command.ts';

/** aws-node's chains: `AWS-SNAT-CHAIN-0`, `AWS-CONNMARK-CHAIN-1`, ... */
const AWS_CHAIN = /^AWS-(SNAT|CONNMARK)-CHAIN-\d+$/;

/** The comments aws-node puts on the rules it adds to built-in chains (and its chains' own). */
const AWS_COMMENTS = new Set([
  'AWS SNAT CHAIN',
  'AWS SNAT CHAIN EXCLUSION',
  'AWS, SNAT',
  'AWS, outbound connections',
  'AWS, CONNMARK',
  'AWS, primary ENI',
  'AWS CONNMARK CHAIN, VPC CIDR',
]);

/** The nftables table aws-node's connmark lives in since it moved off iptables. */
export const AWS_NODE_NFT_TABLE = { family: 'ip', name: 'aws-cni' } as const;

const TABLES = ['nat', 'mangle'] as const;

/**
 * One iptables tool set: `iptables-nft` and friends, or `iptables-legacy`, for IPv4 or IPv6; with
 * how to tell, without creating it, whether a table of it exists in this namespace (reading a
 * legacy table would instantiate it; the nft tool set creates nothing on a save, but is asked only
 * about tables nftables lists).
 */
interface Backend {
  readonly tool: string;
  readonly mode: 'nft' | 'legacy';
  /** nftables' family of its tables (nft mode), or the /proc file listing its tables (legacy). */
  readonly tables: string;
}

const BACKENDS: readonly Backend[] = [
  { tool: 'iptables-nft', mode: 'nft', tables: 'ip' },
  { tool: 'ip6tables-nft', mode: 'nft', tables: 'ip6' },
  { tool: 'iptables-legacy', mode: 'legacy', tables: '/proc/net/ip_tables_names' },
  { tool: 'ip6tables-legacy', mode: 'legacy', tables: '/proc/net/ip6_tables_names' },
];

/** Runs a tool in the node's namespace. */
export type NodeRunner = CommandRunner;

/** The tables of `backend` that exist in this namespace, of those aws-node uses. */
async function existingTables(run: NodeRunner, backend: Backend, nftTables: ReadonlySet<string>) {
  if (backend.mode === 'nft') return TABLES.filter((t) => nftTables.has(`${backend.tables} ${t}`));
  // /proc/net is the reading process's namespace: read it from inside the node's.
  const listed = await run(['cat', backend.tables]);
  const names = new Set(listed.code === 0 ? listed.stdout.split('\n').map((l) => l.trim()) : []);
  return TABLES.filter((t) => names.has(t));
}

/** nftables' tables in this namespace as "family name"; empty when nft cannot list them. */
async function nftTableNames(run: NodeRunner): Promise<Set<string>> {
  const listed = await run(['nft', '-j', 'list', 'tables']);
  if (listed.code !== 0) return new Set();
  try {
    const items = (
      JSON.parse(listed.stdout) as { nftables?: { table?: { family?: string; name?: string } }[] }
    ).nftables;
    return new Set(
      (items ?? []).flatMap((i) => (i.table === undefined ? [] : [`${i.table.family} ${i.table.name}`])),
    );
  } catch {
    return new Set();
  }
}

/** The comment of an iptables-save rule line, unquoted, if it has one. */
function commentOf(line: string): string | undefined {
  const m = /--comment (?:"((?:[^"\\]|\\.)*)"|(\S+))/.exec(line);
  if (m === null) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

/**
 * The iptables-restore script (without `*table` and COMMIT) that removes aws-node's chains and
 * rules from one table's `iptables-save -t TABLE` output; empty when there is nothing of aws-node's.
 */
export function awsNodeRemovalScript(saved: string): string[] {
  const lines = saved.split('\n');
  const chains = lines
    .filter((l) => l.startsWith(':'))
    .map((l) => l.slice(1).split(' ', 1)[0] ?? '')
    .filter((c) => AWS_CHAIN.test(c));
  const deletions = lines.flatMap((l) => {
    const m = /^-A (\S+) (.*)$/.exec(l);
    if (m === null) return [];
    const [, chain = '', spec = ''] = m;
    // A chain's own rules go with the chain (flushed below).
    if (AWS_CHAIN.test(chain)) return [];
    const target = /(?:^| )-[jg] (\S+)/.exec(spec)?.[1];
    const comment = commentOf(spec);
    const aws =
      (target !== undefined && AWS_CHAIN.test(target)) ||
      (comment !== undefined && AWS_COMMENTS.has(comment));
    return aws ? [`-D ${chain} ${spec}`] : [];
  });
  // Jumps first, then every chain emptied (they jump to each other), then the chains themselves.
  return [...deletions, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`)];
}

/** Removes what aws-node left in this namespace's firewall (see above). */
export async function removeAwsNodeFirewall(run: NodeRunner): Promise<AwsNodeFirewallRemoval> {
  const removed: string[] = [];
  const problems: string[] = [];
  const nftTables = await nftTableNames(run);
  for (const backend of BACKENDS) {
    for (const table of await existingTables(run, backend, nftTables)) {
      const saved = await run([`${backend.tool}-save`, '-t', table]);
      // The tool set is not installed: aws-node's rules, if any, cannot be read from here.
      if (saved.code === NOT_STARTED) {
        problems.push(`${backend.tool} ${table}: ${backend.tool}-save is not installed`);
        break;
      }
      if (saved.code !== 0) {
        problems.push(`${backend.tool} ${table}: ${saved.stderr.trim() || `exit ${saved.code}`}`);
        continue;
      }
      const script = awsNodeRemovalScript(saved.stdout);
      if (script.length === 0) continue;
      const restored = await run(
        [`${backend.tool}-restore`, '--noflush'],
        `*${table}\n${script.join('\n')}\nCOMMIT\n`,
      );
      if (restored.code !== 0) {
        problems.push(`${backend.tool} ${table}: ${restored.stderr.trim() || `exit ${restored.code}`}`);
        continue;
      }
      removed.push(...script.map((l) => `${backend.tool} ${table}: ${l}`));
    }
  }
  const { family, name } = AWS_NODE_NFT_TABLE;
  if (nftTables.has(`${family} ${name}`)) {
    const deleted = await run(['nft', 'delete', 'table', family, name]);
    if (deleted.code === 0) removed.push(`nft table ${family} ${name}`);
    else problems.push(`nft table ${family} ${name}: ${deleted.stderr.trim() || `exit ${deleted.code}`}`);
  }
  return { removed, problems };
}
