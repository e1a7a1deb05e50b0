import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EniInfo } from '../../cloud/cloud.ts';
import { EniRegistry, type EniState, MIN_ENI_LIFETIME_MS } from './eni-registry.ts';

function eni(device: number, extra: Partial<EniInfo> = {}): EniInfo {
  return {
    eniId: `eni-${device}`,
    mac: `02:00:00:00:00:0${device}`,
    deviceNumber: device,
    attachmentId: `attach-${device}`,
    subnetId: 'subnet-1',
    subnetCidr: '10.0.0.0/24',
    primaryIp: `10.0.0.${10 + device}`,
    secondaryIps: [],
    interfaceType: 'interface',
    tags: {},
    ...extra,
  };
}

const ALL: EniState[] = ['unmanaged', 'configuring', 'ready', 'detaching', 'deletePending'];

/** A registry holding one ENI (eni-1) in `state`, reached through allowed transitions. */
function withEniIn(state: EniState): EniRegistry {
  const r = new EniRegistry({ now: () => 0 });
  if (state === 'unmanaged') {
    r.add(eni(1), 'unmanaged', { createdByVpcnet: false, unmanagedReason: 'interface type trunk' });
    return r;
  }
  r.add(eni(1), 'configuring', { createdByVpcnet: true });
  const path: EniState[] = ['ready', 'detaching', 'deletePending'];
  for (const next of path.slice(0, path.indexOf(state as never) + 1)) r.transition('eni-1', next);
  return r;
}

describe('EniRegistry', () => {
  test('an ENI EC2 says is gone leaves the registry without being marked deleted, so it can be adopted again', () => {
    for (const state of ['ready', 'configuring'] as const) {
      const r = withEniIn(state);
      r.gone('eni-1');
      assert.equal(r.get('eni-1'), undefined, state);
      assert.equal(r.knows('eni-1'), false, 'not remembered as deleted by vpcnet');
      r.add(eni(1), 'configuring', { createdByVpcnet: true });
      assert.equal(r.get('eni-1')?.state, 'configuring');
    }
    for (const state of ['unmanaged', 'detaching', 'deletePending'] as const) {
      assert.throws(
        () => withEniIn(state).gone('eni-1'),
        new RegExp(`cannot be dropped as gone while ${state}`),
      );
    }
  });

  test('allows exactly the lifecycle’s transitions and names the ENI and both states otherwise', () => {
    const allowed = new Set([
      'configuring→ready',
      'ready→detaching',
      'detaching→configuring',
      'detaching→deletePending',
    ]);
    for (const from of ALL) {
      for (const to of ALL) {
        const r = withEniIn(from);
        assert.equal(r.get('eni-1')?.state, from);
        if (allowed.has(`${from}→${to}`)) {
          assert.equal(r.transition('eni-1', to).state, to);
        } else {
          assert.throws(
            () => r.transition('eni-1', to),
            new RegExp(`^Error: ENI eni-1 cannot go from ${from} to ${to}$`),
          );
          assert.equal(r.get('eni-1')?.state, from, 'a refused transition changes nothing');
        }
      }
    }
  });

  test('an unknown ENI cannot move, and a known one cannot be registered twice', () => {
    const r = withEniIn('ready');
    assert.throws(
      () => r.transition('eni-9', 'ready'),
      /ENI eni-9 cannot go to ready: the registry does not know it/,
    );
    assert.throws(
      () => r.add(eni(1), 'ready', { createdByVpcnet: false }),
      /ENI eni-1 is already registered \(ready\)/,
    );
  });

  test('only a delete-pending ENI may be forgotten; once forgotten it stays known as deleted', () => {
    const r = withEniIn('detaching');
    assert.throws(() => r.forget('eni-1'), /ENI eni-1 cannot be forgotten while detaching/);
    r.transition('eni-1', 'deletePending');
    r.forget('eni-1');
    assert.equal(r.get('eni-1'), undefined);
    assert.equal(r.knows('eni-1'), true, 'a stale describe listing it must not bring it back');
    assert.throws(() => r.add(eni(1), 'configuring', { createdByVpcnet: true }), /was deleted by vpcnet/);
  });

  test('device slots: every attached ENI holds one, a detached or never attached one does not', () => {
    const r = new EniRegistry({ now: () => 0 });
    r.add(eni(0), 'ready', { createdByVpcnet: false });
    r.add(eni(1), 'unmanaged', { createdByVpcnet: false, unmanagedReason: 'interface type trunk' });
    r.add(eni(2), 'configuring', { createdByVpcnet: true });
    r.add(eni(3), 'ready', { createdByVpcnet: true });
    r.transition('eni-3', 'detaching');
    r.add(eni(4), 'ready', { createdByVpcnet: true });
    r.transition('eni-4', 'detaching');
    r.transition('eni-4', 'deletePending');
    r.addLeftOver('eni-left');
    assert.equal(r.attachedCount(), 4);
    assert.deepEqual(r.usedDeviceNumbers(), new Set([0, 1, 2, 3]));
  });

  test('protectedAddresses are the primary IPs of configuring, ready and detaching ENIs', () => {
    const r = new EniRegistry({ now: () => 0 });
    r.add(eni(0), 'ready', { createdByVpcnet: false });
    r.add(eni(1), 'unmanaged', { createdByVpcnet: false, unmanagedReason: 'interface type trunk' });
    r.add(eni(2), 'configuring', { createdByVpcnet: true });
    r.add(eni(3), 'ready', { createdByVpcnet: true });
    r.transition('eni-3', 'detaching');
    r.add(eni(4), 'ready', { createdByVpcnet: true });
    r.transition('eni-4', 'detaching');
    r.transition('eni-4', 'deletePending');
    assert.deepEqual(r.protectedAddresses(), new Set(['10.0.0.10', '10.0.0.12', '10.0.0.13']));
  });

  test('freeable: ready ENIs vpcnet created, never the primary nor a foreign one', () => {
    const clock = { t: 0, now: () => clock.t };
    const r = new EniRegistry(clock);
    r.add(eni(0), 'ready', { createdByVpcnet: true });
    r.add(eni(1), 'ready', { createdByVpcnet: false });
    r.add(eni(2), 'ready', { createdByVpcnet: true });
    r.add(eni(3), 'configuring', { createdByVpcnet: true });
    clock.t = MIN_ENI_LIFETIME_MS;
    assert.deepEqual(r.freeable(), new Set(['eni-2']));
  });

  test('an ENI is not freeable in its first minute after it was attached (the upstream’s minENILifeTime)', () => {
    const clock = { t: 1_000_000, now: () => clock.t };
    const r = new EniRegistry(clock);
    r.add(eni(1), 'ready', { createdByVpcnet: true });
    clock.t += 30_000;
    r.add(eni(2), 'ready', { createdByVpcnet: true });
    assert.deepEqual(r.freeable(), new Set(), 'both are younger than a minute');
    clock.t += MIN_ENI_LIFETIME_MS - 30_000 - 1;
    assert.deepEqual(r.freeable(), new Set(), 'one millisecond short of a minute');
    clock.t += 1;
    assert.deepEqual(r.freeable(), new Set(['eni-1']), 'eni-1 is a minute old; eni-2 half a minute');
    clock.t += 30_000;
    assert.deepEqual(r.freeable(), new Set(['eni-1', 'eni-2']));
    assert.equal(MIN_ENI_LIFETIME_MS, 60_000);
  });

  test('a resumed detach comes back detaching with the recorded attachment, holding its slot', () => {
    const r = new EniRegistry({ now: () => 0 });
    const entry = r.addResumedDetach('eni-7', 'attach-7', undefined);
    assert.deepEqual(
      [entry.state, entry.attachmentId, entry.createdByVpcnet],
      ['detaching', 'attach-7', true],
    );
    assert.equal(r.attachedCount(), 1, 'until the detach is done it may still occupy a device slot');
    assert.equal(r.knows('eni-7'), true);
    r.transition('eni-7', 'deletePending');
    r.forget('eni-7');
    assert.equal(r.knows('eni-7'), true, 'a stale describe cannot bring it back');
  });

  test('DeleteOnTermination pending is a fact of the ENI, cleared when set or when the ENI is detached', () => {
    const r = new EniRegistry({ now: () => 0 });
    r.add(eni(1), 'configuring', { createdByVpcnet: true, deleteOnTerminationPending: true });
    r.add(eni(2), 'ready', { createdByVpcnet: true, deleteOnTerminationPending: true });
    r.deleteOnTerminationSet('eni-1');
    r.transition('eni-2', 'detaching');
    r.transition('eni-2', 'deletePending');
    assert.deepEqual(
      [r.get('eni-1')?.deleteOnTerminationPending, r.get('eni-2')?.deleteOnTerminationPending],
      [false, false],
    );
  });

  test('a transition may carry newer facts of the same ENI, never another ENI’s', () => {
    const r = withEniIn('ready');
    const leaving = eni(1, { secondaryIps: ['10.0.0.50'] });
    assert.deepEqual(r.transition('eni-1', 'detaching', leaving).eni?.secondaryIps, ['10.0.0.50']);
    assert.throws(
      () => r.transition('eni-1', 'configuring', eni(2)),
      /ENI eni-1 cannot take the facts of eni-2/,
    );
  });

  test('the trunk is the unmanaged ENI of interface type trunk', () => {
    const r = new EniRegistry({ now: () => 0 });
    r.add(eni(1, { interfaceType: 'efa' }), 'unmanaged', { createdByVpcnet: false, unmanagedReason: 'efa' });
    assert.equal(r.trunk(), undefined);
    r.add(eni(2, { interfaceType: 'trunk' }), 'unmanaged', {
      createdByVpcnet: false,
      unmanagedReason: 'trunk',
    });
    assert.equal(r.trunk()?.eniId, 'eni-2');
  });

  test('an unmanaged ENI must say why', () => {
    assert.throws(
      () => new EniRegistry({ now: () => 0 }).add(eni(1), 'unmanaged', { createdByVpcnet: false }),
      /ENI eni-1: an unmanaged ENI needs the reason/,
    );
  });
});
