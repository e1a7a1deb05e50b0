// The agent's configuration moved to src/config (one declared table: settings.ts). This
// re-export keeps `import type { AgentConfig } from './config.ts'` in src/agent working while
// those files are being rewritten; import from '../config/agent-config.ts' instead.
export type { AgentConfig } from '../config/agent-config.ts';
