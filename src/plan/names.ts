// Host-side names of an attachment, derived from the attachment key only (never the pod's name):
// two sandboxes of one pod have different container IDs, hence different veths (ownership).
import { createHash } from 'node:crypto';
import type { AttachmentKey } from './attachment.ts';

/** Linux IFNAMSIZ is 16 including the terminating NUL. */
export const MAX_LINK_NAME = 15;
/** At least this many hex digits (32 bits) of the key's hash stay in a name, whatever the prefix. */
const MIN_HASH_DIGITS = 8;
const PREFIX_PATTERN = /^[A-Za-z0-9_.-]*$/;

function keyDigest(purpose: string, key: AttachmentKey): Buffer {
  // JSON keeps the fields unambiguous (a '/' inside one field cannot shift another).
  return createHash('sha256')
    .update(JSON.stringify([purpose, key.network, key.containerId, key.ifName]))
    .digest();
}

/** Stable host veth name: prefix (clamped) + hex of the key's hash, exactly 15 characters. */
export function hostVethName(key: AttachmentKey, prefix = 'vpc'): string {
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`invalid veth prefix ${JSON.stringify(prefix)}`);
  const head = prefix.slice(0, MAX_LINK_NAME - MIN_HASH_DIGITS);
  const digits = MAX_LINK_NAME - head.length;
  return head + keyDigest('veth', key).toString('hex').slice(0, digits);
}

/** A MAC derived from the key for `purpose`: locally administered (bit 1 set), unicast (bit 0 clear). */
export function keyedMac(purpose: string, key: AttachmentKey): string {
  const bytes = [...keyDigest(purpose, key).subarray(0, 6)];
  bytes[0] = ((bytes[0] ?? 0) & 0xfc) | 0x02;
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** Deterministic MAC of the host veth. */
export function hostVethMac(key: AttachmentKey): string {
  return keyedMac('mac', key);
}

/**
 * Deterministic MAC of the pod's end of the veth: the CNI result can name it without reading it
 * back, and a veth rebuilt by the reconcile loop keeps the MAC the pod's peers have cached.
 */
export function podVethMac(key: AttachmentKey): string {
  return keyedMac('pod-mac', key);
}

/**
 * A link name made of `prefix` and the hash of `parts`, exactly 15 characters: stable for the same
 * owner, and different for different owners (ownership: a name belongs to whoever it is derived from).
 */
export function keyedName(prefix: string, parts: readonly string[]): string {
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`invalid name prefix ${JSON.stringify(prefix)}`);
  const head = prefix.slice(0, MAX_LINK_NAME - MIN_HASH_DIGITS);
  const digest = createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  return head + digest.slice(0, MAX_LINK_NAME - head.length);
}
