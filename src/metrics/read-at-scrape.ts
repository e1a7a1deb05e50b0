// Metrics whose value lives elsewhere (a pool, a ledger, a counter kept by the code that counts),
// read when Prometheus scrapes rather than kept in step by every change.
import { Counter, Gauge, type Registry } from 'prom-client';

/** A total read from elsewhere: set to the value the source holds now, per label set. */
export function totalFrom<L extends string>(
  registry: Registry,
  spec: { name: string; help: string; labelNames?: readonly L[] },
  read: () => ReadonlyArray<readonly [Partial<Record<L, string>>, number]>,
): void {
  new Counter<L>({
    ...spec,
    labelNames: spec.labelNames ?? [],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.inc(labels, value);
    },
  });
}

/** A gauge read at scrape time. */
export function gaugeFrom(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}
