// LimitedCloud is built before the agent (bin/vpcnetd.ts), the agent's metrics inside it: the feed
// is what the cloud tells (its `observe` dep) and what the agent listens to once it has started.
import type { Ec2Attempt, Ec2AttemptObserver } from '../../cloud/limited-cloud.ts';

export class Ec2AttemptFeed {
  readonly #listeners = new Set<Ec2AttemptObserver>();

  /** Pass as LimitedCloud's `observe`. */
  readonly emit: Ec2AttemptObserver = (attempt: Ec2Attempt) => {
    for (const listener of this.#listeners) listener(attempt);
  };

  /** Returns the unsubscription. */
  subscribe(listener: Ec2AttemptObserver): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
