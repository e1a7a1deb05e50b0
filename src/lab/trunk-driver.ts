// Which trunk driver a lab with pod ENIs uses: 'vlan' (802.1q, as in production) when this
// kernel can create VLAN devices, else 'macvlan'. The probe runs inside the lab's own VPC
// namespace, never in the root one; the emulator's fabric and the agents then use the same driver.
import { TRUNK_DRIVERS, type TrunkDriver } from '../infra/trunk-driver.ts';
import { runCommand } from './command.ts';

export type { TrunkDriver } from '../infra/trunk-driver.ts';

export function parseTrunkDriver(text: string): TrunkDriver {
  const driver = TRUNK_DRIVERS.find((d) => d === text);
  if (driver === undefined) {
    throw new Error(`--trunk-driver must be one of ${TRUNK_DRIVERS.join(', ')}, not ${JSON.stringify(text)}`);
  }
  return driver;
}

/** True when a VLAN device can be made in `netns` (on a scratch veth pair that is removed again). */
export async function canCreateVlanDevices(netns: string): Promise<boolean> {
  const probe = 'vpcnetprobe0';
  await runCommand('ip', [
    '-n',
    netns,
    'link',
    'add',
    'name',
    probe,
    'type',
    'veth',
    'peer',
    'name',
    'vpcnetprobe1',
  ]);
  try {
    await runCommand('ip', [
      '-n',
      netns,
      'link',
      'add',
      'link',
      probe,
      'name',
      `${probe}.1`,
      'type',
      'vlan',
      'id',
      '1',
    ]);
    return true;
  } catch {
    return false;
  } finally {
    // The pair takes the VLAN device with it.
    await runCommand('ip', ['-n', netns, 'link', 'del', probe]);
  }
}

export async function resolveTrunkDriver(
  requested: TrunkDriver | undefined,
  vpcNetns: string,
): Promise<TrunkDriver> {
  if (requested !== undefined) return requested;
  return (await canCreateVlanDevices(vpcNetns)) ? 'vlan' : 'macvlan';
}
