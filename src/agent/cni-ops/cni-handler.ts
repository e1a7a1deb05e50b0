// The agent's CNI edge: parses the forwarded request once (src/cni), runs the operation on the
// pod's line (one pod, one line), and shapes the answer for the runtime's CNI version. This is the
// only place where errors become CNI error codes.
import { CNI_ERR_INTERNAL, CniError } from '../../cni/errors.ts';
import { addressesOnInterface } from '../../cni/prev-result.ts';
import { type CniRequest, parseCniRequest } from '../../cni/request.ts';
import { chainResult, formatResult } from '../../cni/result.ts';
import { errorVersionFor } from '../../cni/versions.ts';
import { type ForwardedRequest, type ForwardedResponse, versionResult } from '../../cni/wire.ts';
import { errorText } from '../../infra/error-text.ts';
import type { KeyedSerializer } from '../../infra/keyed-serializer.ts';
import type { PodIdentity } from '../../plan/attachment.ts';
import { podLineKey } from '../../plan/pod-line.ts';
import { PRIMARY_POD_IF } from '../../plan/pod-plan.ts';
import type { PodIpAnnotator, PodRef } from '../../pods/pod-ip-annotation.ts';
import type { AttachRequest, OperationContext } from '../context.ts';
import type { SpoolGuard } from '../spool-replay/spool-drain.ts';
import { applySpooledDelsOf, type SpoolFirstDeps } from '../spool-replay/spool-first.ts';
import { addAttachment } from './add.ts';
import { checkAttachment } from './check.ts';
import { delAttachment, delRecorded } from './del.ts';
import { collectRecoveredNotListed } from './recovered-gc.ts';
import { podAddress } from './result.ts';

export interface CniHandlerDeps {
  readonly ctx: OperationContext;
  readonly serializer: KeyedSerializer;
  /** Observes each operation (metrics, bench): command, outcome, service time. */
  readonly observe?: (command: string, ok: boolean, ms: number) => void;
  /** The DEL spool: an ADD applies the DELs spooled for its own key first (spool-first.ts). */
  readonly spool?: SpoolFirstDeps;
  /** ANNOTATE_POD_IP: the pod's address written into its annotation after ADD, emptied after DEL. */
  readonly podIps?: PodIpAnnotator;
}

/**
 * The pod whose annotation names this attachment's address: only its primary interface's (a
 * second network's address is not the pod's IP), and only a pod the runtime named.
 */
function annotatedPod(pod: PodIdentity, ifName: string): PodRef | undefined {
  if (ifName !== PRIMARY_POD_IF || pod.namespace === undefined || pod.name === undefined) return undefined;
  return { namespace: pod.namespace, name: pod.name };
}

function toAttachRequest(req: Exclude<CniRequest, { command: 'VERSION' | 'GC' | 'STATUS' }>): AttachRequest {
  const pod: PodIdentity = req.pod
    ? { namespace: req.pod.namespace, name: req.pod.name, ...(req.pod.uid ? { uid: req.pod.uid } : {}) }
    : {};
  const prev = req.netConf.prevResult;
  // Only the addresses on this attachment's interface: later plugins in a chain may add their own.
  const prevResultIps = prev === undefined ? [] : addressesOnInterface(prev, req.key.ifName, req.netns);
  return {
    key: req.key,
    netns: req.netns,
    pod,
    mtu: req.netConf.mtu,
    vethPrefix: req.netConf.vethPrefix,
    ...(req.netConf.podSGEnforcingMode === undefined
      ? {}
      : { enforcingMode: req.netConf.podSGEnforcingMode }),
    prevResultIps,
  };
}

function ok(stdout: string): ForwardedResponse {
  return { exitCode: 0, stdout };
}

function failure(err: unknown, cniVersion: string): ForwardedResponse {
  const cniErr = err instanceof CniError ? err : new CniError(CNI_ERR_INTERNAL, errorText(err));
  return { exitCode: 1, stdout: `${JSON.stringify(cniErr.toJson(cniVersion))}\n` };
}

/**
 * CNI GC: every attachment of this network that the runtime no longer lists is removed, each
 * exactly as its DEL would (in its pod's line, from the ledger). An ADD still at work is left
 * alone: the runtime lists only what it knew when it started the GC.
 */
async function collectGarbage(
  deps: CniHandlerDeps,
  req: Extract<CniRequest, { command: 'GC' }>,
): Promise<void> {
  const { ctx } = deps;
  const valid = new Set(req.validAttachments.map((a) => `${a.containerId}/${a.ifName}`));
  const stale = ctx.ledger
    .list()
    .filter(
      (a) =>
        a.key.network === req.netConf.name &&
        a.phase === undefined &&
        !valid.has(`${a.key.containerId}/${a.key.ifName}`),
    );
  for (const att of stale) {
    await deps.serializer.run(podLineKey(att.pod, att.key), async () => {
      // Only the attachment the runtime did not list: not one re-created with its key meanwhile.
      if (ctx.ledger.get(att.key)?.createdAt !== att.createdAt) return;
      await delRecorded(ctx, att);
    });
  }
  if (stale.length > 0)
    ctx.log.info('GC removed attachments the runtime no longer lists', { count: stale.length });
  await collectRecoveredNotListed(ctx, req);
}

/**
 * `guard`: the request is a spooled DEL (spool-drain.ts); it is applied only if still spooled once
 * it holds the pod's line, and removed from the spool in that line.
 */
export async function handleCni(
  deps: CniHandlerDeps,
  fwd: ForwardedRequest,
  guard?: SpoolGuard,
): Promise<ForwardedResponse> {
  const started = performance.now();
  const cniVersion = errorVersionFor(fwd.stdin);
  let req: CniRequest;
  try {
    req = parseCniRequest(fwd.env, fwd.stdin);
  } catch (err) {
    deps.observe?.(fwd.env.CNI_COMMAND ?? 'unknown', false, performance.now() - started);
    return failure(err, cniVersion);
  }
  if (req.command === 'VERSION') return ok(`${JSON.stringify(versionResult(req.cniVersion))}\n`);
  // STATUS: the agent serves only once it has rebuilt its state, so an answer means ready.
  if (req.command === 'STATUS') {
    deps.observe?.('STATUS', true, performance.now() - started);
    return ok('');
  }
  if (req.command === 'GC') {
    try {
      await collectGarbage(deps, req);
      deps.observe?.('GC', true, performance.now() - started);
      return ok('');
    } catch (err) {
      deps.observe?.('GC', false, performance.now() - started);
      return failure(err, req.netConf.cniVersion);
    }
  }
  const attach = toAttachRequest(req);
  const { ctx } = deps;
  // The pod identity its ADD recorded wins: a later DEL may carry less of it (no UID, or no
  // CNI_ARGS at all) and must still queue behind that pod's other operations.
  const line = podLineKey(ctx.ledger.get(attach.key)?.pod ?? attach.pod, attach.key);
  try {
    const stdout = await deps.serializer.run(line, async () => {
      // Applied meanwhile by an ADD of its key, before that ADD attached: nothing left to do.
      if (guard !== undefined && !(await guard.stillSpooled())) return '';
      switch (req.command) {
        case 'ADD': {
          if (deps.spool !== undefined)
            await applySpooledDelsOf(attach.key, deps.spool, (del) =>
              delAttachment(ctx, toAttachRequest(del)),
            );
          const result = await addAttachment(ctx, attach);
          // Queued, never awaited: the annotation is written after the answer (pod-ip-annotation.ts).
          const pod = deps.podIps && annotatedPod(attach.pod, attach.key.ifName);
          const ip = result.ips?.[0]?.address.split('/')[0];
          if (pod && ip !== undefined) deps.podIps?.added(pod, ip);
          // Given a prevResult (vpcnet after another plugin), the result carries it on (spec 1.0).
          const chained = chainResult(req.netConf.prevResult, result);
          return `${JSON.stringify(formatResult(chained, req.netConf.cniVersion))}\n`;
        }
        case 'DEL': {
          const recorded = ctx.ledger.get(attach.key);
          await delAttachment(ctx, attach);
          await guard?.consume();
          const pod = recorded && deps.podIps && annotatedPod(recorded.pod, recorded.key.ifName);
          const ip = recorded && podAddress(recorded);
          if (pod && ip !== undefined) deps.podIps?.released(pod, ip);
          return '';
        }
        case 'CHECK':
          await checkAttachment(ctx, attach);
          return '';
      }
    });
    deps.observe?.(req.command, true, performance.now() - started);
    return ok(stdout);
  } catch (err) {
    ctx.log.warn(`${req.command} failed`, {
      key: attach.key,
      error: errorText(err),
    });
    deps.observe?.(req.command, false, performance.now() - started);
    return failure(err, req.netConf.cniVersion);
  }
}
