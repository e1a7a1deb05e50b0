// Whether a path exists now (any kind of file; a dangling symlink does not).
import { access } from 'node:fs/promises';

export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
