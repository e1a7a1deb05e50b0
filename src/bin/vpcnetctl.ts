import { defaultCliEnv } from '../cli/cli-env.ts';
import { runCli } from '../cli/main.ts';
import { errorText } from '../infra/error-text.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
runCli(process.argv.slice(2), defaultCliEnv()).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`vpcnetctl: ${errorText(err)}\n`);
    process.exitCode = 1;
  },
);
