// The emulator's admin API for the audit's emulator tests: JSON both ways, an error status fails
// the test naming the call, and the EC2 calls the emulator counted per action.
import assert from 'node:assert/strict';

export type EmulatorAdmin = (method: string, path: string, body?: unknown) => Promise<unknown>;

export function emulatorAdmin(url: string): EmulatorAdmin {
  return async (method, path, body) => {
    const res = await fetch(`${url}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  };
}

/** EC2 calls per action the emulator has answered so far. */
export async function ec2CallCounts(admin: EmulatorAdmin): Promise<Record<string, number>> {
  const state = (await admin('GET', '/admin/state')) as { ec2Calls: Record<string, { calls: number }> };
  return Object.fromEntries(Object.entries(state.ec2Calls).map(([k, v]) => [k, v.calls]));
}
