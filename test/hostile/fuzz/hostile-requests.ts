// Hostile CNI requests for one lab node: a command, a valid request for it (aimed at the node's
// live sentinel attachment or at another container), one to three defects that apply to that
// command, and maybe noise. Every request is one the plugin and the agent must refuse.
import fc from 'fast-check';
import { CONFIG_DEFECTS } from './config-defects.ts';
import {
  baseDraft,
  type FuzzCommand,
  type FuzzTarget,
  type HostileRequest,
  render,
  validVersionsFor,
} from './draft.ts';
import { ENV_DEFECTS } from './env-defects.ts';
import { NOISE } from './noise.ts';

const COMMANDS: readonly FuzzCommand[] = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS'];

export function hostileRequests(t: FuzzTarget): fc.Arbitrary<HostileRequest> {
  return fc.constantFrom(...COMMANDS).chain((command) => {
    const kinds = [...ENV_DEFECTS, ...CONFIG_DEFECTS].filter((k) => k.appliesTo.includes(command));
    return fc
      .record({
        version: fc.constantFrom(...validVersionsFor(command)),
        aimAtSentinel: fc.boolean(),
        otherId: fc.stringMatching(/^[a-z0-9][a-z0-9_.-]{0,40}$/),
        noise: fc.option(NOISE, { nil: undefined }),
        defects: fc.array(fc.oneof(...kinds.map((k) => k.arb(t))), { minLength: 1, maxLength: 3 }),
      })
      .map(({ version, aimAtSentinel, otherId, noise, defects }) => {
        const draft = baseDraft(t, command, version, aimAtSentinel ? undefined : `fuzz${otherId}`);
        noise?.apply(draft);
        for (const defect of defects) defect.apply(draft);
        return render(draft);
      });
  });
}
