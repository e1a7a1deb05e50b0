// The one error of configuration. Its message names the variable, what it must be and what it
// got, so an operator can fix the DaemonSet's environment from the log line alone.
export class ConfigError extends Error {
  override name = 'ConfigError';
}
