// The lab's emulator process: runs inside the VPC namespace (started with `ip netns exec`),
// serves EC2, IMDS and the Kubernetes slice on the VPC's service addresses and the admin API
// on a unix socket in the lab's state dir, and makes ENIs real links through the Linux fabric.
// `kubectl exec` into the lab's DaemonSet pods runs in their nodes (pod-runtime.ts).
import { rm } from 'node:fs/promises';
import { LinuxFabric } from '../../emulator/fabric/linux-fabric.ts';
import { startEmulator } from '../../emulator/server.ts';
import { labLayout } from '../layout.ts';
import { labContainerRuntime } from '../pod-runtime.ts';
import type { TrunkDriver } from '../trunk-driver.ts';

/** Runs until SIGTERM or SIGINT, then closes the emulator; resolves with the exit code. */
export async function runEmulatorProcess(
  name: string,
  trunkDriver: TrunkDriver,
  repoRoot: string,
  ipv6 = false,
  podEni = false,
): Promise<number> {
  const layout = labLayout(name, 0, ipv6);
  const log = (line: Record<string, unknown>): void => {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
  };
  await rm(layout.emulator.adminSocket, { force: true });
  const emulator = await startEmulator({
    vpc: layout.vpc,
    listen: layout.emulator.listen,
    adminSocket: layout.emulator.adminSocket,
    // Named although this process runs inside it: a misstarted emulator then fails instead of
    // touching the namespace it happens to run in.
    fabric: new LinuxFabric({ vpcNetns: layout.vpcNetns, trunkMode: trunkDriver }),
    containerRuntime: labContainerRuntime(name, repoRoot, podEni ? { podEni: { trunkDriver } } : {}),
    log,
  });
  log({
    msg: 'emulator serving',
    lab: name,
    urls: emulator.urls,
    adminSocket: layout.emulator.adminSocket,
    trunkDriver,
  });
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log({ msg: 'emulator stopping', signal });
  await emulator.close();
  return 0;
}
