// A fleet worker process: hosts many nodes (fleet-node.ts) and does what the scheduler says over
// the IPC channel (protocol.ts). Many nodes per process, because a node's agent mostly waits: one
// process holds hundreds, and the fleet spreads them over a few processes to use every core.
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '../../src/emulator/vpc/ids.ts';
import { errorText } from '../../src/infra/error-text.ts';
import { FleetNode } from './fleet-node.ts';
import type { FromWorker, NodeSpec, ToWorker, WorkerConfig } from './protocol.ts';

const send = (m: FromWorker): void => {
  process.send?.(m);
};

let config: WorkerConfig | undefined;
const nodes = new Map<number, FleetNode>();
/** Per second of Date.now: the nodes that retried an EC2 call in it. */
const retrying = new Map<number, Set<number>>();
const addErrors = new Map<string, number>();

function startNode(spec: NodeSpec): void {
  if (config === undefined) throw new Error('a node before the worker config');
  const node = new FleetNode(spec, {
    config,
    random: seededRandom(config.seed * 7919 + spec.index),
    observe: (attempt) => {
      if ((attempt.attempt ?? 1) <= 1) return;
      const second = Math.floor(Date.now() / 1000);
      let set = retrying.get(second);
      if (set === undefined) {
        set = new Set();
        retrying.set(second, set);
      }
      set.add(spec.index);
    },
    addFailed: (message) => addErrors.set(message, (addErrors.get(message) ?? 0) + 1),
  });
  nodes.set(spec.index, node);
  const t0 = performance.now();
  startWithRestarts(node).then(
    (restarts) => send({ type: 'started', node: spec.index, ms: performance.now() - t0, restarts }),
    (err: unknown) => send({ type: 'startFailed', node: spec.index, error: errorText(err) }),
  );
}

/** The kubelet restarts a crashed container after 10 s, doubling up to 5 minutes (CrashLoopBackOff). */
const CRASH_BACKOFF_MS = 10_000;
const CRASH_BACKOFF_MAX_MS = 300_000;
/** A node whose agent cannot start this many times is reported as failed. */
const MAX_STARTS = 6;

/**
 * Starts the node's agent as its DaemonSet pod would run: an agent that exits at start (e.g. EC2
 * throttled its first describes past its retry bound) is started again after the kubelet's
 * backoff, on the same state dir. Resolves with the restarts it took.
 */
async function startWithRestarts(node: FleetNode): Promise<number> {
  for (let restarts = 0; ; restarts++) {
    try {
      await node.start();
      return restarts;
    } catch (err) {
      if (restarts + 1 >= MAX_STARTS) throw err;
      process.stderr.write(
        `fleet: ${node.spec.name}'s agent exited at start (${errorText(err)}); restarting\n`,
      );
      await sleep(Math.min(CRASH_BACKOFF_MAX_MS, CRASH_BACKOFF_MS * 2 ** restarts));
    }
  }
}

function nodeOf(index: number): FleetNode {
  const node = nodes.get(index);
  if (node === undefined) throw new Error(`worker ${process.pid} has no node ${index}`);
  return node;
}

async function handle(m: ToWorker): Promise<void> {
  switch (m.type) {
    case 'config':
      config = m.config;
      send({ type: 'ready' });
      return;
    case 'start':
      startNode(m.node);
      return;
    case 'add': {
      const outcome = await nodeOf(m.node).add(m.pod);
      if (outcome.started)
        send({ type: 'podStarted', pod: m.pod, ms: outcome.ms, failedAttempts: outcome.failedAttempts });
      else
        send({
          type: 'podGaveUp',
          pod: m.pod,
          failedAttempts: outcome.failedAttempts,
          error: outcome.error ?? 'deleted before it started',
        });
      return;
    }
    case 'del':
      try {
        await nodeOf(m.node).del(m.pod);
        send({ type: 'podDeleted', pod: m.pod, ok: true });
      } catch (err) {
        send({ type: 'podDeleted', pod: m.pod, ok: false, error: errorText(err) });
      }
      return;
    case 'stop':
      await nodeOf(m.node).stop();
      nodes.delete(m.node);
      send({ type: 'stopped', node: m.node });
      return;
    case 'report':
      send({
        type: 'report',
        nodes: [...nodes.values()].map((n) => n.report()),
        retryingNodes: Object.fromEntries([...retrying].map(([s, set]) => [String(s), set.size])),
        addErrors: Object.fromEntries(addErrors),
      });
      return;
    case 'exit':
      await Promise.all([...nodes.values()].map((n) => n.stop()));
      process.exit(0);
  }
}

process.on('message', (m: ToWorker) => {
  handle(m).catch((err: unknown) => {
    process.stderr.write(`fleet worker ${process.pid}: ${m.type} failed: ${errorText(err)}\n`);
  });
});
process.on('disconnect', () => process.exit(1));
