// An ENI as the pool takes it (EniSpec), for tests: its MAC and primary address follow its device
// number, all in one 10.0.0.0/16 subnet.
import type { EniSpec } from '../pool/pool.ts';

export function eniSpec(eniId: string, deviceNumber: number): EniSpec {
  return {
    eniId,
    mac: `02:00:00:00:00:0${deviceNumber}`,
    deviceNumber,
    subnetId: 'subnet-1',
    primaryIp: `10.0.${deviceNumber}.4`,
    subnetCidr: '10.0.0.0/16',
  };
}
