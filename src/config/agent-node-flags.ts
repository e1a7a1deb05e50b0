// Node's own flags for the agent's process, given wherever the agent is started: the image sets
// them as NODE_OPTIONS (image/Containerfile, from scripts/image-recipe.ts), the lab puts them on
// the command line of its host-process agent (src/lab/processes/agents.ts).
//
// --max-semi-space-size=2 (MiB): V8's young generation is sized for throughput by default (16 MiB
// semi-spaces on 64-bit), and an agent that allocates little per pod operation keeps most of it
// resident, several MiB of RSS a node pays for nothing (the bench's fill section shows it). A flag
// V8 reads once, at its start: setting it from inside the
// running agent (v8.setFlagsFromString) has no effect, so it must be given to node.
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
