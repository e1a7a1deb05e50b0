// Which network namespace a path names right now: the device and inode of the nsfs file behind
// it. A path (/var/run/netns/X) can be reused by a new namespace once the old one is gone; the
// identity tells the two apart.
import { stat } from 'node:fs/promises';

export async function netnsIdentity(path: string): Promise<string | undefined> {
  try {
    const st = await stat(path);
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
}
