// NodePort support at agent start: finds the primary ENI's link by its MAC, sets up (or removes)
// the conntrack mark chain and its policy rule, and checks rp_filter on that link. The agent
// changes no sysctl: a strict reverse-path filter is reported for the operator to change.
import { readFile } from 'node:fs/promises';
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import { BRANCH_DEVICE_PREFIX } from '../plan/kinds/trunk-device.ts';
import type { Dataplane } from './dataplane.ts';
import { rpFilterProblem } from './ip-cli/node-port.ts';

export interface NodePortSetup {
  readonly enabled: boolean;
  readonly mark: number;
  /** MAC of the primary ENI (instance metadata). */
  readonly primaryMac: string;
  readonly vethPrefix: string;
}

export interface NodePortSetupDeps {
  readonly dataplane: Dataplane;
  readonly log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Reads a file under /proc/sys in the node's namespace; default: this process's /proc/sys. */
  readonly readSysctl?: (path: string) => Promise<string>;
}

async function sysctlNumber(
  read: (path: string) => Promise<string>,
  path: string,
): Promise<number | undefined> {
  try {
    const n = Number((await read(path)).trim());
    return Number.isInteger(n) ? n : undefined;
  } catch {
    return undefined; // not readable here (no such link, no /proc/sys): nothing to judge
  }
}

/**
 * Returns the problem it logged, if any: a strict rp_filter; no link with the primary ENI's MAC
 * (then nothing is set up: rules naming no link would mark nothing); or a set-up that failed (no
 * nf_tables in the kernel, where external SNAT lets the agent run otherwise). NodePort support
 * serves some Services; it does not stop the agent from serving every pod, so it is logged as an
 * error with the fix, not a failed start.
 */
export async function setupNodePort(
  cfg: NodePortSetup,
  deps: NodePortSetupDeps,
): Promise<string | undefined> {
  const { dataplane, log } = deps;
  const links = (await dataplane.kernel.readNode()).links;
  const primary = links.find((l) => l.address === cfg.primaryMac.toLowerCase())?.ifname;
  if (primary === undefined && cfg.enabled) {
    const problem = `NodePort support: no link in the node's namespace has the primary ENI's MAC ${cfg.primaryMac}; replies to NodePort traffic are not steered`;
    log.warn(problem);
    return problem;
  }
  try {
    await dataplane.setupNodePort({
      enabled: cfg.enabled,
      mark: cfg.mark,
      // Disabled: the name is not used (the chain is removed), any valid one will do.
      primaryLink: primary ?? 'lo',
      podLinkPrefixes: [cfg.vethPrefix, BRANCH_DEVICE_PREFIX],
    });
  } catch (err) {
    const problem = `NodePort support could not be set up (${errorText(err)}): replies to NodePort traffic for pods on secondary ENIs are not steered; load nf_tables, or set AWS_VPC_CNI_NODE_PORT_SUPPORT=false`;
    log.error(problem);
    return problem;
  }
  log.info('NodePort support', {
    enabled: cfg.enabled,
    mark: `0x${cfg.mark.toString(16)}`,
    primaryLink: primary,
  });
  if (!cfg.enabled || primary === undefined) return undefined;
  const read = deps.readSysctl ?? ((p: string) => readFile(p, 'utf8'));
  const all = await sysctlNumber(read, '/proc/sys/net/ipv4/conf/all/rp_filter');
  const dev = await sysctlNumber(read, `/proc/sys/net/ipv4/conf/${primary}/rp_filter`);
  if (all === undefined || dev === undefined) return undefined;
  const problem = rpFilterProblem(primary, all, dev);
  if (problem !== undefined) log.warn(problem);
  return problem;
}
