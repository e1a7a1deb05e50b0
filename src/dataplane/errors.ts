// One error type for kernel failures, carrying what an operator needs: which attachment (host veth),
// which step, and the kernel's own message.

export class DataplaneError extends Error {
  /** The failing step, e.g. the `ip -batch` line ("rule add from 10.0.0.5/32 lookup 2 prio 1536"). */
  readonly step: string;
  /** Host veth of the attachment the operation was for ('' for node-wide operations). */
  readonly hostVeth: string;
  /** What the kernel (or tool) said, e.g. "RTNETLINK answers: File exists". */
  readonly kernelMessage: string;

  constructor(operation: string, step: string, hostVeth: string, kernelMessage: string) {
    const on = hostVeth === '' ? '' : ` on ${hostVeth}`;
    super(`${operation}${on}: step "${step}" failed: ${kernelMessage}`);
    this.name = 'DataplaneError';
    this.step = step;
    this.hostVeth = hostVeth;
    this.kernelMessage = kernelMessage;
  }
}

/**
 * A pod's namespace that holds more of a kind (routes of a table through its interface, rules, ...)
 * than the netlink helper reads there: it was not read. The pod controls what is in it, so this
 * judges that pod alone; it names the namespace and what there is too much of.
 */
export class PodNamespaceTooLarge extends DataplaneError {
  readonly netns: string;
  /** The helper's words: "holds more than 10000 routes (table main, dev eth0); …". */
  readonly what: string;

  constructor(netns: string, what: string) {
    super('observePod', 'read pod namespace', '', `${netns} ${what}`);
    this.name = 'PodNamespaceTooLarge';
    this.netns = netns;
    this.what = what;
  }
}
