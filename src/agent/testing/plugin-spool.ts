// A DEL spooled as the plugin spools it (src/plugin/spool.ts, which the layering keeps agent tests
// from importing): one JSON file per DEL, named so that names sort in arrival order.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ForwardedRequest } from '../../cni/wire.ts';
import { SPOOL_FILE_SUFFIX } from '../../spool/format.ts';

let spooled = 0;

/** Writes `request` into the spool dir `dir` under a name of the plugin's form; returns its path. */
export function spoolDelAsPlugin(dir: string, request: ForwardedRequest): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tag = (++spooled).toString(16).padStart(8, '0');
  const name = `${String(Date.now()).padStart(15, '0')}-${String(process.hrtime.bigint()).padStart(20, '0')}-${process.pid}-${tag}${SPOOL_FILE_SUFFIX}`;
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(request), { mode: 0o600 });
  return path;
}
