// Whether the network namespace an attachment was made for is gone. Only proof counts: the recorded
// path does not exist, or it names another namespace now (not the identity recorded at ADD, see
// Attachment.netnsId). A path that cannot be read for another reason is not proof of anything.
import { stat } from 'node:fs/promises';

export type SandboxNetns = 'present' | 'gone' | 'unreadable';

/** The stat the check needs (injectable for tests). */
export type StatPath = (path: string) => Promise<{ dev: number; ino: number }>;

function errorCode(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

export async function sandboxNetns(
  path: string,
  recordedId: string | undefined,
  statPath: StatPath = stat,
): Promise<SandboxNetns> {
  let st: { dev: number; ino: number };
  try {
    st = await statPath(path);
  } catch (err) {
    const code = errorCode(err);
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'gone' : 'unreadable';
  }
  // The same device:inode form as dataplane/netns-identity.ts, which recorded it.
  if (recordedId !== undefined && `${st.dev}:${st.ino}` !== recordedId) return 'gone';
  return 'present';
}
