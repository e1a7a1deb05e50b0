// A minimal glob for absolute paths ('*' and '?' within one path segment), enough for the log
// patterns a support bundle takes (/var/log/pods/kube-system_vpcnet-*/*/*.log); Node 20 has no
// fs.glob.
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';

function segmentPattern(segment: string): RegExp {
  const body = segment
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '[^/]*')
    .replace(/\?/g, '[^/]');
  return new RegExp(`^${body}$`);
}

/** The existing paths matching `pattern` (absolute), sorted; none when nothing matches. */
export async function expandGlob(pattern: string): Promise<string[]> {
  const segments = pattern.split('/').filter((s) => s !== '');
  let found = ['/'];
  for (const segment of segments) {
    const next: string[] = [];
    for (const dir of found) {
      if (!/[*?]/.test(segment)) {
        next.push(join(dir, segment));
        continue;
      }
      const re = segmentPattern(segment);
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const n of names) if (re.test(n) && !n.startsWith('.')) next.push(join(dir, n));
    }
    found = next;
  }
  const existing = await Promise.all(
    found.map((p) =>
      access(p).then(
        () => p,
        () => undefined,
      ),
    ),
  );
  return existing.filter((p): p is string => p !== undefined).sort();
}
