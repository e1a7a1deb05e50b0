// The lab's waits (an emulator admin call, an agent's first health answer, a supervisor's grace)
// are sized for this machine's kernel. Under a slow one (the stock kernel in a software-emulated VM,
// where an agent takes over a minute to start) they all stretch by one factor from the environment.

export const LAB_TIMEOUT_SCALE_VAR = 'VPCNET_LAB_TIMEOUT_SCALE';

/** The factor in VPCNET_LAB_TIMEOUT_SCALE (default 1); throws, naming the variable, on anything but a number ≥ 1. */
export function labTimeoutScale(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[LAB_TIMEOUT_SCALE_VAR];
  if (raw === undefined || raw.trim() === '') return 1;
  const scale = Number(raw);
  if (!Number.isFinite(scale) || scale < 1) {
    throw new Error(
      `${LAB_TIMEOUT_SCALE_VAR}=${JSON.stringify(raw)}: expected a number of at least 1 (how many times longer the lab waits)`,
    );
  }
  return scale;
}

/** `ms` stretched by the lab's timeout scale. */
export function labTimeout(ms: number, env: NodeJS.ProcessEnv = process.env): number {
  return Math.round(ms * labTimeoutScale(env));
}
