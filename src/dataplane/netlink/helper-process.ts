// The resident bin/vpcnet-netlink process: started once (and again after it dies), it carries
// every request of the netlink driver. Requests get ids; answers are matched by id, so any number
// may be in flight. If the helper dies, whatever is in flight fails with the reason at once (no
// hang), and the next request starts a new helper.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { LineReader } from './line-reader.ts';
import { type Answer, parseAnswer } from './wire.ts';

export interface HelperOptions {
  /** Path of bin/vpcnet-netlink. */
  readonly program: string;
  /** The node's namespace, when it is not the agent's own (tests, lab). */
  readonly nodeNetns?: string;
}

interface Pending {
  resolve(a: Answer): void;
  reject(e: Error): void;
}

/** Keeps the end of what the helper wrote to stderr, for the error when it dies. */
const STDERR_KEEP = 2000;

export class NetlinkHelper {
  readonly #options: HelperOptions;
  #child: ChildProcessWithoutNullStreams | undefined;
  #started: Promise<void> | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #stderr = '';
  #starts = 0;

  constructor(options: HelperOptions) {
    this.#options = options;
  }

  /** The helper's pid while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** How many times a helper was started (1 unless one died). */
  get starts(): number {
    return this.#starts;
  }

  /** Starts the helper if none runs; rejects when the program cannot be started. */
  start(): Promise<void> {
    this.#started ??= this.#spawn();
    return this.#started;
  }

  #spawn(): Promise<void> {
    const args = this.#options.nodeNetns === undefined ? [] : ['--node-netns', this.#options.nodeNetns];
    const child = spawn(this.#options.program, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child = child;
    this.#starts++;
    this.#stderr = '';
    // Linear in the answer's size however it is cut into chunks (line-reader.ts).
    const lines = new LineReader((line) => this.#onLine(line));
    child.stdout.on('data', (chunk: Buffer) => lines.push(chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-STDERR_KEEP);
    });
    // A write to a helper that just died: its 'exit' reports why; nothing to add here.
    child.stdin.on('error', () => {});
    return new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => {
        this.#gone(child, `cannot start ${this.#options.program}: ${err.message}`);
        reject(new Error(`cannot start ${this.#options.program}: ${err.message}`));
      });
      child.once('exit', (code, signal) => {
        const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
        const said = this.#stderr.trim();
        this.#gone(
          child,
          `${this.#options.program} (pid ${child.pid}) ${how}${said === '' ? '' : `: ${said}`}`,
        );
      });
    });
  }

  /** The helper is gone: every request in flight fails with `why`; the next one starts a new helper. */
  #gone(child: ChildProcessWithoutNullStreams, why: string): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    this.#started = undefined;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(new Error(`netlink helper: ${why}; the request was not answered`));
  }

  #onLine(line: string): void {
    if (line === '') return;
    let answer: Answer;
    try {
      answer = parseAnswer(line);
    } catch (err) {
      // The two sides disagree on the wire: restart rather than guess which request it was.
      const child = this.#child;
      if (child !== undefined) {
        this.#gone(child, `sent an unreadable answer (${String(err)})`);
        child.kill('SIGKILL');
      }
      return;
    }
    const p = this.#pending.get(answer.id);
    if (p === undefined) return;
    this.#pending.delete(answer.id);
    p.resolve(answer);
  }

  /** Sends one request built for a fresh id and waits for its answer. */
  async request(build: (id: number) => string): Promise<Answer> {
    await this.start();
    const child = this.#child;
    if (child === undefined) throw new Error('netlink helper: not running');
    const id = this.#nextId++;
    const text = build(id);
    return new Promise<Answer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      child.stdin.write(text);
    });
  }

  /** Ends the helper (by its pid, through its stdin closing, then SIGKILL if it lingers). */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}
