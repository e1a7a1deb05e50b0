// A small server a namespace suite runs inside a network namespace: a node script that prints one
// line once it listens. The suite keeps the child to end it, by its PID, in `after`.
import { type ChildProcess, spawn } from 'node:child_process';

/** Starts `script` with node in `netns`; resolves once it prints (listens), rejects if it exits first. */
export function startNetnsServer(netns: string, script: string, servers: ChildProcess[]): Promise<void> {
  const child = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  servers.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`server in ${netns} exited with ${code}`)));
  });
}

/** Ends the servers this suite started that still run, by their PID. */
export function stopNetnsServers(servers: readonly ChildProcess[]): void {
  for (const s of servers) if (s.exitCode === null && s.pid !== undefined) process.kill(s.pid);
}
